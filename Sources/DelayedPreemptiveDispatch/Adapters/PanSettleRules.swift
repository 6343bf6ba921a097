/// The rules of a ``PanSettleDetector``, with no clock, queue or lock.
///
/// The pans until a settle are a round of the ``AdapterTimer``: a stop asks it for
/// `settleDelay`; a begin holds the settle off with a delay no clock reaches, so that only the
/// round's `maxWait` can end it while a pan is in motion. The round's end settles, or, during a
/// pan, makes the next stop settle at once.
struct PanSettleRules: AdapterRules {
  /// A delay no clock reaches: the settle waits for the next stop, or for `maxWait`.
  private static let hold = Duration.nanoseconds(Int64.max)

  let settleDelay: Duration
  let onSettle: @Sendable () -> Void
  var timer: AdapterTimer
  var isPanning = false
  var isSettled = true
  /// `maxWait` passed during a pan: the next stop settles at once.
  var isOverdue = false

  mutating func begin(at reading: Duration) {
    let now = timer.observe(reading)
    isPanning = true
    isSettled = false
    if !isOverdue { timer.arm(after: Self.hold, at: now) }
  }

  mutating func stop(at reading: Duration) {
    let now = timer.observe(reading)
    isPanning = false
    isSettled = false
    if isOverdue { settle() } else { timer.arm(after: settleDelay, at: now) }
  }

  mutating func timerDue() {
    guard !isSettled else { return }
    if isPanning { isOverdue = true } else { settle() }
  }

  private mutating func settle() {
    isOverdue = false
    isSettled = true
    timer.send(onSettle)
  }
}
