/// What the waiters of ``AllResourcesLoadedSignal/allLoaded()`` hold: the signal's rules under
/// its lock, shared with its ``AdapterCore``.
///
/// It is an object of its own so that a waiter holds it and not the signal: the signal can be
/// released while tasks wait, and its release resumes them.
final class LoadBatch: Sendable {
  let state: LockBox<BatchRules>

  init(state: LockBox<BatchRules>) {
    self.state = state
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
          if state.isReleased || Task.isCancelled { return state.count }
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

  /// The signal is going away: every waiter gets the loads counted so far.
  func release() {
    let (count, waiters) = state.withLock { state in
      state.isReleased = true
      return (state.count, state.takeWaiters())
    }
    for waiter in waiters { waiter.resume(returning: count) }
  }
}
