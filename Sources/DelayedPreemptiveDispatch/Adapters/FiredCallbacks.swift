import Dispatch

/// The callbacks that one firing of an adapter's timer enqueued, for a clock that awaits the work
/// its timers cause.
///
/// A ``SchedulingClock`` (such as `ManualClock`) awaits the delivery of the adapter's timer,
/// which only enqueues its callbacks. So the delivery then awaits these callbacks
/// (``wait()``), and `advance(by:)` returns after the callbacks its timers caused have run.
final class FiredCallbacks: Sendable {
  private let pending = DispatchGroup()

  /// Counts `callback` as pending and returns it wrapped so that it reports its end.
  func track(_ callback: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
    pending.enter()
    return { [pending] in
      callback()
      pending.leave()
    }
  }

  /// Returns once every tracked callback has run.
  func wait() async {
    await withCheckedContinuation { continuation in
      pending.notify(queue: .global()) { continuation.resume() }
    }
  }
}
