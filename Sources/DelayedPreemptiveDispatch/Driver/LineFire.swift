/// What a line's timer firing did.
@usableFromInline
enum LineFire<Work: Sendable> {
  /// Not the line's live timer: nothing to do.
  case stale
  /// The deadline moved later: schedule this timer for the remainder.
  case rearm(TimerRequest)
  /// The burst ended.
  case ended(BurstEnding<Work>)
  /// The line's oldest decided run waited for the spacing, and may start now.
  case runReady
  /// A decided run behind others waited for the spacing: it starts after them, as usual.
  case gateOpened
}
