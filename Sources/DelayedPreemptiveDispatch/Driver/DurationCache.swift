/// Remembers the last `Duration` converted to nanoseconds.
///
/// Converting a `Duration` divides a 128-bit count of attoseconds; through `components` (Apple
/// systems before 2024) that costs more than the rest of a `delay` call together. Callers
/// nearly always pass the same delay again (a debounce of `.milliseconds(300)` per keystroke),
/// so one cached pair, compared in two 64-bit words, turns that division into a comparison.
@usableFromInline
struct DurationCache: Sendable {
  @usableFromInline var duration: Duration = .zero
  @usableFromInline var nanoseconds: Int64 = 0

  /// `duration` in whole nanoseconds, clamped to `Int64`.
  @inlinable
  mutating func nanoseconds(of duration: Duration) -> Int64 {
    if duration != self.duration {
      self.duration = duration
      nanoseconds = duration.saturatingNanoseconds
    }
    return nanoseconds
  }

  /// The instant a submission at `now` asks to run at.
  @inlinable
  mutating func deadline(after delay: RequestedDelay, from now: TimelineInstant) -> TimelineInstant
  {
    switch delay {
    case .nanoseconds(let nanoseconds): return now.advanced(byNanoseconds: nanoseconds)
    case .duration(let duration): return now.advanced(byNanoseconds: nanoseconds(of: duration))
    }
  }
}
