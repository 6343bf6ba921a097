import Dispatch

/// The time an adapter runs on: how it reads the time and how it makes the one
/// ``DelayedPreemptiveDispatchQueue`` that is its only timer.
///
/// In real time both follow `DispatchTime` (the monotonic clock the queue's `asyncAfter` uses);
/// with a clock, both follow that clock. Instants are offsets on one time line, so an adapter
/// never compares readings of two different clocks.
struct AdapterTiming: Sendable {
  /// The current instant, as an offset on the adapter's time line.
  let now: @Sendable () -> Duration
  /// Makes the adapter's timer: a queue with no task of its own (each submission brings one).
  let makeQueue: @Sendable (_ label: String, DelayOptions) -> DelayedPreemptiveDispatchQueue
  /// The clock, when it is a ``SchedulingClock``: it awaits the callbacks a firing causes.
  private var scheduler: (any SchedulingClock)?

  /// Real time: `DispatchTime` readings and an `asyncAfter`-driven queue.
  static var realTime: AdapterTiming {
    AdapterTiming(
      now: { .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds)) },
      makeQueue: { label, options in
        DelayedPreemptiveDispatchQueue(label: label, options: options)
      })
  }

  /// Any clock with `Duration`: readings of `clock`, and a queue whose timer sleeps on it.
  static func clock<C: Clock>(_ clock: C) -> AdapterTiming where C.Duration == Duration {
    let origin = clock.now
    var timing = AdapterTiming(
      now: { origin.duration(to: clock.now) },
      makeQueue: { label, options in
        DelayedPreemptiveDispatchQueue(label: label, clock: clock, options: options)
      })
    timing.scheduler = clock as? any SchedulingClock
    return timing
  }

  /// Runs `body`, the firing of the adapter's timer. On a ``SchedulingClock``, `body` gets a
  /// ``FiredCallbacks`` to track its callbacks with, and the clock awaits them before it moves
  /// further; otherwise it gets `nil`.
  func firing(_ body: (FiredCallbacks?) -> Void) {
    guard let scheduler else { return body(nil) }
    let fired = FiredCallbacks()
    body(fired)
    if !fired.isEmpty {
      scheduler.schedule(after: .zero, tolerance: nil) { await fired.wait() }
    }
  }
}
