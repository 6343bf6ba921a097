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
  /// ``now()``, but clamped at the end of the time line instead of stopping the program (for
  /// `flush`).
  func saturatingNow() -> TimelineInstant
  /// Delivers once `deadline` is reached.
  func arm(at deadline: TimelineInstant, tolerance: Duration?, delivery: TimerDelivery)
    -> TimerHandle
  /// Runs started outside a timer delivery (a burst due at its submission, `leading`,
  /// `maxSubmissions`): on a ``SchedulingClock``, the clock awaits `drained` before its next
  /// `advance` returns, as it awaits the runs its timers start (T5); otherwise nothing.
  func awaitOnClock(_ drained: @escaping @Sendable () async -> Void)
}

extension BurstTimer {
  /// A time line that never ends reads its time as it is.
  @usableFromInline
  func saturatingNow() -> TimelineInstant { now() }

  /// A timer that no test clock drives awaits nothing.
  @usableFromInline
  func awaitOnClock(_ drained: @escaping @Sendable () async -> Void) {}
}
