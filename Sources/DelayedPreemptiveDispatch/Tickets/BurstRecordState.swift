/// The state of a ``BurstRecord`` with the tasks that wait on it, as ``BurstRecord/withLock(_:)``
/// hands it out: only ever accessed under the record's lock.
struct BurstRecordState {
  var word: BurstRecordWord
  var waiters: [BurstRecordLocks.Waiter]

  /// Takes out the waiters whose outcome is known, with their outcomes, to resume once the lock
  /// is released.
  mutating func takeResolved() -> [(CheckedContinuation<DelayOutcome, Never>, DelayOutcome)] {
    var resolved: [(CheckedContinuation<DelayOutcome, Never>, DelayOutcome)] = []
    var waiting: [BurstRecordLocks.Waiter] = []
    for waiter in waiters {
      if let outcome = word.outcome(of: waiter.seq, leading: waiter.leading) {
        resolved.append((waiter.continuation, outcome))
      } else {
        waiting.append(waiter)
      }
    }
    waiters = waiting
    return resolved
  }
}
