import Dispatch

/// The callbacks that one firing of an adapter's timer enqueued, for a clock that awaits the work
/// its timers cause.
///
/// A ``SchedulingClock`` (such as `ManualClock`) awaits the adapter's timer task, which only
/// enqueues its callback. So the adapter also schedules, on the same clock and due at once, an
/// action that awaits these callbacks: the clock awaits it before it moves further, so
/// `advance(by:)` returns after the callbacks its timers caused have run. This stays within the
/// clock's public contract and needs no hook in the queue's timer.
final class FiredCallbacks: Sendable {
  private let pending = DispatchGroup()

  /// Whether every callback tracked so far has run (or none was).
  var isEmpty: Bool { pending.wait(timeout: .now()) == .success }

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
