import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// The one timer abstraction of every shell: how it reads the time and arms a timer.
///
/// A shell arms at most one live timer at a time (one for the whole instance, keyed or not); a
/// timer that is no longer live may still fire, and is a no-op by generation. Shells hold what
/// they arm weakly, so a pending timer keeps no owner alive.
@usableFromInline
protocol BurstTimer: Sendable {
  func now() -> TimelineInstant
  /// Delivers once `deadline` is reached.
  func arm(at deadline: TimelineInstant, tolerance: Duration?, delivery: TimerDelivery)
    -> TimerHandle
}
