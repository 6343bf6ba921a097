/// The state of an ``AllResourcesLoadedSignal``: the current batch, the last signalled one and
/// the waiters of ``AllResourcesLoadedSignal/allLoaded()``.
///
/// It lives in its own object so that a waiter holds it and not the signal: the signal can be
/// released while tasks wait, and its release resumes them.
final class LoadBatch: Sendable {
  struct State {
    /// Loads in the current batch.
    var count = 0
    /// The count of the last signalled batch; `nil` before the first signal.
    var lastSignalled: Int?
    /// Names the latest load; a timer armed by an earlier one is stale.
    var generation: UInt64 = 0
    /// When the current batch must be signalled by its `maxWait`; `nil` with no bound or no
    /// batch open. The adapter decides by it, not by the timer's burst, so a load that lands
    /// while an expiring timer waits for the lock cannot open a fresh window.
    var deadline: Duration?
    /// The latest clock reading seen under the lock. Readings are taken before the lock, so a
    /// thread may bring an older one; the state keeps time moving forward.
    var latest = Duration.zero
    var waiters: [UInt64: CheckedContinuation<Int, Never>] = [:]
    var nextWaiter: UInt64 = 0
    /// The signal was released: nothing will be signalled any more.
    var released = false
  }

  let state = LockBox(State())

  /// Counts a load read at `reading` and returns how long from now the signal is due, with the
  /// generation that names it.
  static func load(
    _ state: inout State, reading: Duration, quietPeriod: Duration, maxWait: Duration?
  ) -> (delay: Duration, generation: UInt64) {
    state.latest = max(state.latest, reading)
    let now = state.latest
    if state.count == 0, let maxWait { state.deadline = now + maxWait }
    state.count += 1
    state.generation &+= 1
    let delay = state.deadline.map { min(quietPeriod, $0 - now) } ?? quietPeriod
    return (delay, state.generation)
  }

  /// Whether the timer named `generation`, firing at `reading`, ends the current batch: it is
  /// the latest one, or the batch has reached its `maxWait` (a load that raced this firing
  /// then belongs to the batch, and the timer it armed is superseded).
  static func isDue(_ state: inout State, generation: UInt64, reading: Duration) -> Bool {
    state.latest = max(state.latest, reading)
    if generation == state.generation { return true }
    guard state.count > 0, let deadline = state.deadline else { return false }
    return state.latest >= deadline
  }

  /// Suspends until the current batch is signalled, or returns at once by the contract's rule.
  ///
  /// If the wait ends without a signal (the waiting task is cancelled, or the signal is
  /// released), it returns the loads counted so far in the unfinished batch.
  func allLoaded() async -> Int {
    let id = state.withLock { state in
      defer { state.nextWaiter &+= 1 }
      return state.nextWaiter
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
        let ready = state.withLock { state -> Int? in
          if state.count == 0, let last = state.lastSignalled { return last }
          if state.released || Task.isCancelled { return state.count }
          state.waiters[id] = continuation
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    } onCancel: {
      let cancelled = state.withLock { state in
        state.waiters.removeValue(forKey: id).map { ($0, state.count) }
      }
      if let (continuation, count) = cancelled { continuation.resume(returning: count) }
    }
  }

  /// Ends the current batch and hands its waiters over, to be resumed outside the lock.
  static func signal(_ state: inout State) -> (
    count: Int, waiters: [CheckedContinuation<Int, Never>]
  ) {
    let count = state.count
    state.count = 0
    state.lastSignalled = count
    state.deadline = nil
    state.generation &+= 1
    defer { state.waiters = [:] }
    return (count, Array(state.waiters.values))
  }

  /// The signal is going away: every waiter gets the loads counted so far.
  func release() {
    let (count, waiters) = state.withLock { state in
      state.released = true
      defer { state.waiters = [:] }
      return (state.count, Array(state.waiters.values))
    }
    for waiter in waiters { waiter.resume(returning: count) }
  }
}
