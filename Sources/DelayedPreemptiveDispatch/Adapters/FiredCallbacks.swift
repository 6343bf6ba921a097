/// The callbacks that one firing of an adapter's timer enqueued, for a clock that awaits the work
/// its timers cause.
///
/// A ``SchedulingClock`` (such as `ManualClock`) awaits the adapter's timer task, which only
/// enqueues its callback. So the adapter also schedules, on the same clock and due at once, an
/// action that awaits these callbacks: the clock awaits it before it moves further, so
/// `advance(by:)` returns after the callbacks its timers caused have run. This stays within the
/// clock's public contract and needs no hook in the queue's timer.
final class FiredCallbacks: Sendable {
  private struct State {
    var pending = 0
    var waiter: CheckedContinuation<Void, Never>?
  }

  private let state = LockBox(State())

  /// Whether a callback was enqueued through ``track(_:)``.
  var isEmpty: Bool { state.withLock { $0.pending == 0 && $0.waiter == nil } }

  /// Counts `callback` as pending and returns it wrapped so that it reports its end.
  func track(_ callback: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
    state.withLock { $0.pending += 1 }
    return { [self] in
      callback()
      finishOne()
    }
  }

  /// Returns once every tracked callback has run.
  func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let done = state.withLock { state -> Bool in
        guard state.pending > 0 else { return true }
        state.waiter = continuation
        return false
      }
      if done { continuation.resume() }
    }
  }

  private func finishOne() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      state.pending -= 1
      guard state.pending == 0 else { return nil }
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }
}
