/// The rules of an ``AllResourcesLoadedSignal``, with no clock, queue or lock: the current
/// batch, the last signalled one, and the waiters of ``AllResourcesLoadedSignal/allLoaded()``.
///
/// A batch is a round of the ``AdapterTimer``: each load asks it for `quietPeriod`, within the
/// batch's `maxWait`, and the round's end signals the batch.
struct BatchRules: AdapterRules {
  let quietPeriod: Duration
  let onAllLoaded: (@Sendable (_ loadedCount: Int) -> Void)?
  var timer: AdapterTimer
  /// Loads in the current batch.
  var count = 0
  /// The count of the last signalled batch; `nil` before the first signal.
  var lastSignalled: Int?
  var waiters: [UInt64: CheckedContinuation<Int, Never>] = [:]
  var nextWaiter: UInt64 = 0
  /// The signal was released: nothing will be signalled any more.
  var isReleased = false

  mutating func load(at reading: Duration) {
    let now = timer.observe(reading)
    count += 1
    timer.arm(after: quietPeriod, at: now)
  }

  /// Ends the batch: its callback is enqueued, and its waiters resumed after the lock.
  mutating func timerDue() {
    guard count > 0 else { return }
    let count = count
    let waiters = takeWaiters()
    self.count = 0
    lastSignalled = count
    if let onAllLoaded { timer.send { onAllLoaded(count) } }
    if !waiters.isEmpty { timer.run { for waiter in waiters { waiter.resume(returning: count) } } }
  }

  /// Removes every waiter, to be resumed outside the lock.
  mutating func takeWaiters() -> [CheckedContinuation<Int, Never>] {
    defer { waiters = [:] }
    return Array(waiters.values)
  }
}
