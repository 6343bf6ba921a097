/// The rules of a ``PanSettleDetector``, with no clock, queue or lock.
///
/// A stop asks the timer for `settleDelay`; a begin holds the settle off with a delay no clock
/// reaches, so that only the queue's `maxWait` can end the burst while a pan is in motion. A due
/// timer settles, or, during a pan, makes the next stop settle at once.
struct PanSettleRules: AdapterRules {
  /// A delay no clock reaches: the settle waits for the next stop, or for `maxWait`.
  private static let hold = Duration.nanoseconds(Int64.max)

  let settleDelay: Duration
  let onSettle: @Sendable () -> Void
  var plan: TimerPlan
  var isPanning = false
  var isSettled = true
  /// `maxWait` passed during a pan: the next stop settles at once.
  var isOverdue = false

  mutating func begin(at reading: Duration) {
    let now = plan.observe(reading)
    isPanning = true
    isSettled = false
    if !isOverdue { plan.arm(after: Self.hold, at: now) }
  }

  mutating func stop(at reading: Duration) {
    let now = plan.observe(reading)
    isPanning = false
    isSettled = false
    if isOverdue { settle() } else { plan.arm(after: settleDelay, at: now) }
  }

  mutating func timerDue() {
    guard !isSettled else { return }
    if isPanning { isOverdue = true } else { settle() }
  }

  private mutating func settle() {
    isOverdue = false
    isSettled = true
    plan.endRound()
    plan.send(onSettle)
  }
}
