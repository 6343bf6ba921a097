/// What a line's timer firing did.
@usableFromInline
enum LineFire<Work: Sendable> {
  /// Not the line's live timer: nothing to do.
  case stale
  /// The deadline moved later: schedule this timer for the remainder.
  case rearm(TimerRequest)
  /// The burst ended.
  case ended(BurstEnding<Work>)
}
