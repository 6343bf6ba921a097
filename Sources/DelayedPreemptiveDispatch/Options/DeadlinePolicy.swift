/// How a new submission moves the deadline of the pending burst.
///
/// ```
/// delay(0.5) at t=0, then delay(0.1) at t=0.2
///   .extend   deadline = max(0.5, 0.3) = 0.5   (the original semantics)
///   .restart  deadline = 0.2 + 0.1    = 0.3
/// ```
public enum DeadlinePolicy: Sendable, Hashable {
  /// A delay can only push the deadline later:
  /// `deadline = max(pending deadline, now + delay)`. The original semantics, and the default.
  case extend
  /// The newest delay sets the deadline: `deadline = now + delay`, earlier or later.
  case restart
}
