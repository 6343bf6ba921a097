/// The time an adapter runs on: its one timer, which is also how it reads the time.
///
/// In real time it is the GCD shells' ``DispatchTimeTimer`` (`DispatchTime`, the monotonic
/// clock `asyncAfter` uses); with a clock, a ``ClockTimer`` on that clock. Instants are offsets on
/// the timer's one time line, so an adapter never compares readings of two different clocks.
struct AdapterTiming: Sendable {
  let timer: any BurstTimer
  /// The clock is a ``SchedulingClock``, which awaits each firing's delivery: the delivery
  /// then awaits the callbacks the firing enqueued (``FiredCallbacks``), so that the clock moves
  /// further only once they have run.
  let awaitsCallbacks: Bool

  /// The current instant, as an offset on the timer's time line.
  func now() -> Duration {
    .nanoseconds(Int64(clamping: timer.now().nanoseconds))
  }

  /// Real time: `DispatchTime` readings and `asyncAfter` timers.
  static var realTime: AdapterTiming {
    AdapterTiming(timer: DispatchTimeTimer(), awaitsCallbacks: false)
  }

  /// Any clock with `Duration`: readings of `clock`, and timers that sleep on it.
  static func clock<C: Clock>(_ clock: C) -> AdapterTiming where C.Duration == Duration {
    let timer = ClockTimer(clock: clock)
    return AdapterTiming(timer: timer, awaitsCallbacks: timer.timeline.scheduler != nil)
  }
}
