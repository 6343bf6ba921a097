/// Wakes a sleeping worker early: a NOTIFY rings it, and the end of a run rings the gauges'
/// sampler. A ring while nobody waits is kept for the next wait, so a wake-up that arrives while
/// the worker is busy is not lost.
///
/// A lock, not an actor: a ring is a call that returns at once, without a hop, since every run's
/// end rings one.
final class Doorbell: Sendable {
  private struct State {
    var rung = false
    var waiter: CheckedContinuation<Void, Never>?
    /// Makes the timer of an earlier wait a no-op.
    var generation = 0
  }
  private let state = Locked(State())

  func ring() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard let waiter = state.waiter else {
        state.rung = true
        return nil
      }
      state.waiter = nil
      return waiter
    }
    waiter?.resume()
  }

  /// Returns when the bell rings (or rang since the last wait), after `timeout`, or when the
  /// calling task is cancelled. One task waits at a time.
  func wait(timeout: Duration) async {
    let generation = state.withLock { state -> Int? in
      if state.rung {
        state.rung = false
        return nil
      }
      state.generation += 1
      return state.generation
    }
    guard let generation, !Task.isCancelled else { return }
    let timer = Task {
      try await Task.sleep(for: timeout)
      self.expire(generation)
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { waiter in
        // A ring between the check above and now (the timer's, or the cancellation's) is kept
        // in `rung`: it ends this wait at once.
        let rang = state.withLock { state -> Bool in
          if state.rung { return true }
          state.waiter = waiter
          return false
        }
        if rang { waiter.resume() }
      }
    } onCancel: {
      ring()
    }
    timer.cancel()
    state.withLock { $0.rung = false }
  }

  private func expire(_ expected: Int) {
    if state.withLock({ $0.generation == expected }) { ring() }
  }
}
