/// How one submission (one call of `delay`) resolved. Each submission resolves exactly once.
public enum DelayOutcome: Sendable, Hashable {
  /// This submission's task ran, and has returned.
  case executed
  /// A later submission of the same burst replaced this one before it ran.
  case preempted
  /// `cancel()`, or the release of the queue or actor, ended the burst before this submission
  /// ran; also the outcome of a submission made when no task was ever given.
  case cancelled
}
