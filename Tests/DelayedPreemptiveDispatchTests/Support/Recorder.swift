import DelayedPreemptiveDispatch

/// A thread-safe log of what tasks did, for assertions.
final class Recorder<Element: Sendable>: Sendable {
  private struct State: Sendable {
    var elements: [Element] = []
    /// Tasks in ``waitUntilCount(_:)``, with the count each waits for.
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let box = LockBox(State())

  func append(_ element: Element) {
    let reached = box.withLock { state in
      state.elements.append(element)
      let count = state.elements.count
      guard state.waiters.contains(where: { $0.count <= count }) else {
        return [CheckedContinuation<Void, Never>]()
      }
      let reached = state.waiters.filter { $0.count <= count }.map(\.continuation)
      state.waiters.removeAll { $0.count <= count }
      return reached
    }
    for waiter in reached { waiter.resume() }
  }

  /// Returns once at least `count` elements have been appended: woken by the append itself,
  /// never polling. Unbounded: a real-time suite's time limit turns a lost element into a
  /// failure.
  func waitUntilCount(_ count: Int) async {
    await withCheckedContinuation { continuation in
      let reached = box.withLock { state in
        if state.elements.count >= count { return true }
        state.waiters.append((count, continuation))
        return false
      }
      if reached { continuation.resume() }
    }
  }

  var elements: [Element] {
    box.withLock { $0.elements }
  }

  /// The same as ``elements``.
  var all: [Element] { elements }

  var count: Int {
    box.withLock { $0.elements.count }
  }
}

/// Counts outcomes of many tickets.
func tally(_ tickets: [DelayTicket]) async -> [DelayOutcome: Int] {
  var counts: [DelayOutcome: Int] = [:]
  for ticket in tickets { counts[await ticket.outcome, default: 0] += 1 }
  return counts
}

/// A weak reference a task can capture to reach its own queue or actor without a cycle.
final class WeakReference<Object: AnyObject & Sendable>: Sendable {
  private struct Storage {
    weak var object: Object?
  }

  private let box = LockBox(Storage())

  var object: Object? {
    get { box.withLock { $0.object } }
    set { box.withLock { $0.object = newValue } }
  }
}

/// A one-shot gate: ``wait()`` suspends until ``open()``, and returns at once after it.
final class AsyncGate: Sendable {
  private struct State {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = LockBox(State())

  func wait() async {
    await withCheckedContinuation { continuation in
      let isOpen = state.withLock { state in
        if !state.isOpen { state.waiters.append(continuation) }
        return state.isOpen
      }
      if isOpen { continuation.resume() }
    }
  }

  func open() {
    let waiters = state.withLock { state in
      state.isOpen = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }
}
