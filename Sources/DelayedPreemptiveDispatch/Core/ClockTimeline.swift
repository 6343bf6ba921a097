/// A clock seen as ``Tick``s: nanoseconds since the clock's instant at `init`.
///
/// The state machine runs on `Tick` for every clock, so it is compiled once, specialised, inside
/// this module; only reading the clock goes through the generic `C`. Both the queue's clock
/// timer and the actor use it.
struct ClockTimeline<C: Clock>: Sendable where C.Duration == Duration {
  let clock: C
  let origin: C.Instant
  /// The clock as a ``SchedulingClock``, when it is one.
  let scheduler: (any SchedulingClock)?

  init(clock: C) {
    self.clock = clock
    origin = clock.now
    scheduler = clock as? any SchedulingClock
  }

  func now() -> Tick {
    Tick(nanoseconds: UInt64(clamping: origin.duration(to: clock.now).saturatingNanoseconds))
  }

  func instant(at tick: Tick) -> C.Instant {
    origin.advanced(by: .nanoseconds(Int64(clamping: tick.nanoseconds)))
  }
}
