/// An instant of an instance's time line, in nanoseconds: `DispatchTime.uptimeNanoseconds` for
/// the real-time GCD queue, or the offset from the clock's instant at `init` for every instance
/// that runs on a `Clock` (the clock-driven queue, the actor, the adapters on a clock).
///
/// Arithmetic saturates at both ends instead of trapping, so a huge delay means "never, unless
/// flushed" rather than a crash. A clock's time line reads at most `Int64.max` nanoseconds
/// (about 292 years) from `init`, so a deadline that far or farther is never reached; see
/// ``ClockTimeline``.
@usableFromInline
struct TimelineInstant: InstantProtocol {
  @usableFromInline var nanoseconds: UInt64

  @inlinable
  init(nanoseconds: UInt64) {
    self.nanoseconds = nanoseconds
  }

  @inlinable
  func advanced(by duration: Duration) -> TimelineInstant {
    advanced(byNanoseconds: duration.saturatingNanoseconds)
  }

  @inlinable
  func advanced(byNanoseconds delta: Int64) -> TimelineInstant {
    if delta >= 0 {
      let (sum, overflow) = nanoseconds.addingReportingOverflow(UInt64(delta))
      return TimelineInstant(nanoseconds: overflow ? .max : sum)
    }
    let magnitude = delta.magnitude
    return TimelineInstant(nanoseconds: nanoseconds > magnitude ? nanoseconds - magnitude : 0)
  }

  @inlinable
  func duration(to other: TimelineInstant) -> Duration {
    other.nanoseconds >= nanoseconds
      ? .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds))
      : .nanoseconds(-Int64(clamping: nanoseconds - other.nanoseconds))
  }

  @inlinable
  static func < (lhs: TimelineInstant, rhs: TimelineInstant) -> Bool {
    lhs.nanoseconds < rhs.nanoseconds
  }
}
