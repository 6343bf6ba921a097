/// A clock seen as ``TimelineInstant``s: nanoseconds since the clock's instant at `init`.
///
/// The state machine runs on `TimelineInstant` for every clock, so it is compiled once, specialised, inside
/// this module; only reading the clock goes through the generic `C`. Both the queue's clock
/// timer and the actor use it.
///
/// A time line spans `Int64.max` nanoseconds (about 292 years) from `init`. A deadline at or
/// beyond that end means "never": the timer armed for it asks a ``SchedulingClock`` for a delay
/// of `Int64.max` nanoseconds, which the clock may drop. Reading the time once the clock has
/// moved past the end stops the program with a message: the instance could no longer tell one
/// instant from the next, so every timer would re-arm forever and no task would run.
@usableFromInline
struct ClockTimeline<C: Clock>: Sendable where C.Duration == Duration {
  @usableFromInline let clock: C
  @usableFromInline let origin: C.Instant
  /// The clock as a ``SchedulingClock``, when it is one.
  let scheduler: (any SchedulingClock)?

  init(clock: C) {
    self.clock = clock
    origin = clock.now
    scheduler = clock as? any SchedulingClock
  }

  /// Inlinable, so that a shell specialised in its client (the keyed actor) reads its clock
  /// without generic calls.
  @inlinable
  func now() -> TimelineInstant {
    let nanoseconds = origin.duration(to: clock.now).saturatingNanoseconds
    guard nanoseconds < .max else { Self.pastTheEnd(origin.duration(to: clock.now)) }
    return TimelineInstant(nanoseconds: UInt64(clamping: nanoseconds))
  }

  /// The time, clamped to the end of the time line instead of stopping there: for `flush`,
  /// which only needs it for the spacing, and must run a burst whatever the clock did.
  @usableFromInline
  func saturatingNow() -> TimelineInstant {
    TimelineInstant(
      nanoseconds: UInt64(clamping: origin.duration(to: clock.now).saturatingNanoseconds))
  }

  @usableFromInline @inline(never)
  static func pastTheEnd(_ elapsed: Duration) -> Never {
    requireArgument(
      false,
      "the clock moved \(elapsed) past the creation of this queue, actor or adapter, beyond "
        + "the about 292 years (Int64.max nanoseconds) its time line spans; create it closer "
        + "to the instants it runs at")
    fatalError("unreachable: requireArgument(false, _) stops the program")
  }

  func instant(at tick: TimelineInstant) -> C.Instant {
    origin.advanced(by: .nanoseconds(Int64(clamping: tick.nanoseconds)))
  }
}
