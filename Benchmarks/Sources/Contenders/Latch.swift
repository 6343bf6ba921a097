import Dispatch

/// Opens once; a benchmark waits on it for "the final task has run", blocking or suspending.
public final class Latch: Sendable {
  private struct State {
    var isOpen = false
    var waiter: CheckedContinuation<Void, Never>?
  }

  private let state = Locked(State())
  private let semaphore = DispatchSemaphore(value: 0)

  public init() {}

  public func open() {
    let waiter = state.withLock { state in
      state.isOpen = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
    semaphore.signal()
  }

  /// Blocks the calling thread until `open()`; never call it on the cooperative pool.
  public func wait() {
    semaphore.wait()
  }

  /// Suspends until `open()`.
  public func wait() async {
    await withCheckedContinuation { continuation in
      let isOpen = state.withLock { state in
        if !state.isOpen { state.waiter = continuation }
        return state.isOpen
      }
      if isOpen { continuation.resume() }
    }
  }
}

/// Opens its latch once `count` calls of `arrive()` have happened.
public final class Countdown: Sendable {
  private let count: Locked<Int>
  public let latch = Latch()

  public init(count: Int) {
    self.count = Locked(count)
  }

  /// Calls still missing; 0 once the latch opened by counting down.
  public var remaining: Int { count.withLock { $0 } }

  /// Opens the latch after `seconds` whatever the count, so that a lost task shows up as a
  /// non-zero `remaining` instead of a hung benchmark.
  public func openLatch(after seconds: Int) {
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds)) { [latch] in
      latch.open()
    }
  }

  public func arrive() {
    let isLast = count.withLock { remaining in
      remaining -= 1
      return remaining == 0
    }
    if isLast { latch.open() }
  }
}
