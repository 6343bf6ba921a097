/// The rules of one adapter with no clock, queue or lock: its state, and the ``TimerPlan`` that
/// its transitions append to. ``AdapterCore`` keeps them under its lock.
protocol AdapterRules: Sendable {
  var plan: TimerPlan { get set }

  /// The adapter's timer is due: ``TimerPlan/fired(_:at:)`` says so.
  mutating func timerDue()
}
