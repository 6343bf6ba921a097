/// A clock seen as ``Tick``s: nanoseconds since the clock's instant at `init`.
///
/// The state machine runs on `Tick` for every clock, so it is compiled once, specialised, inside
/// this module; only reading the clock goes through the generic `C`. Both the queue's clock
/// timer and the actor use it.
///
/// A time line spans `Int64.max` nanoseconds (about 292 years) from `init`. A deadline at or
/// beyond that end means "never": the timer armed for it asks a ``SchedulingClock`` for a delay
/// of `Int64.max` nanoseconds, which the clock may drop. Reading the time once the clock has
/// moved past the end stops the program with a message: the instance could no longer tell one
/// instant from the next, so every timer would re-arm forever and no task would run.
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
    let elapsed = origin.duration(to: clock.now)
    let nanoseconds = elapsed.saturatingNanoseconds
    requireArgument(
      nanoseconds < .max,
      "the clock moved \(elapsed) past the creation of this queue, actor or adapter, beyond "
        + "the about 292 years (Int64.max nanoseconds) its time line spans; create it closer "
        + "to the instants it runs at")
    return Tick(nanoseconds: UInt64(clamping: nanoseconds))
  }

  func instant(at tick: Tick) -> C.Instant {
    origin.advanced(by: .nanoseconds(Int64(clamping: tick.nanoseconds)))
  }
}
