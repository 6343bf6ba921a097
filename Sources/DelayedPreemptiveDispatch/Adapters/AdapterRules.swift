/// The rules of one adapter with no clock, queue or lock: its state, and the ``AdapterTimer``
/// that its transitions ask for delays and callbacks. ``AdapterCore`` keeps them under its lock.
protocol AdapterRules: Sendable {
  var timer: AdapterTimer { get set }

  /// The round ended: its timer was due, or an event found it due (``AdapterTimer/takeDue()``).
  mutating func timerDue()
}
