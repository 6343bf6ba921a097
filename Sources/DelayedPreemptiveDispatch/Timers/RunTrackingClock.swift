/// A ``SchedulingClock`` that also knows the runs a submission starts at once (rule T5): the
/// actors start such a run's worker through it, so that the clock treats the run as it treats
/// the work of one of its own timers. `ManualClock` adopts it; the protocol is for this package
/// only.
///
/// Without it, a clock learns of a run that a submission started only through a zero-delay
/// action that awaits the run (``BurstTimer/awaitOnClock(_:)``); if that run sleeps on the same
/// clock until after the next `advance`'s target, that `advance` waits for a run that waits for
/// the clock.
@usableFromInline
package protocol RunTrackingClock: SchedulingClock {
  /// Starts `run` at once, in a task of its own. Outside the work of this clock's timers, the
  /// clock's next `advance` awaits it as the work of a timer due at the current instant: until
  /// it returns or sleeps on the clock, in which case `advance` goes on and resumes it at its
  /// sleep's deadline. Inside such work (a run a timer started, say), the task belongs to that
  /// work, as any task it starts does.
  func startRun(_ run: @escaping @Sendable () async -> Void)
}
