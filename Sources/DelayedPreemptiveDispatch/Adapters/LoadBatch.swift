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
    var waiters: [UInt64: CheckedContinuation<Int, Never>] = [:]
    var nextWaiter: UInt64 = 0
    /// The signal was released: nothing will be signalled any more.
    var released = false
  }

  let state = LockBox(State())

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
