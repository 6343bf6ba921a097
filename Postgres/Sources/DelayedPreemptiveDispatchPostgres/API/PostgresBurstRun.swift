/// One run of a burst, as its handler sees it (``PostgresDelayedPreemptiveQueue/run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)``).
///
/// `fence` makes the handler's writes elsewhere safe against a stale run of the same key: a
/// replica that was paused, or cut off from the database, for longer than the lease may still
/// be running the burst when another replica runs it again. The worker cancels such a stale
/// run as soon as it learns of it, but a write it had already started can land after the new
/// run's. Store the fence next to what the handler writes, and write only over an older one:
///
/// ```sql
/// UPDATE search_index SET body = $2, fence = $3 WHERE document = $1 AND fence < $3
/// ```
///
/// A stale run's write then matches no row, whatever the timing.
public struct PostgresBurstRun<Value: Codable & Sendable>: Sendable {
  /// The burst's key.
  public var key: String
  /// The burst's last value: later submissions of the burst replaced earlier ones; with
  /// `merge: .append`, the concatenation of its submissions' arrays, in submission order.
  public var value: Value
  /// 1 for the burst's first run; counts retries and re-runs after a lost lease: every claim
  /// counts as an attempt, also one whose worker died.
  public var attempt: Int
  /// Strictly greater than the fence of every earlier claim of this key, on any replica, also
  /// after the key's row was deleted and created again: each claim takes the next value of one
  /// database sequence.
  public var fence: Int64

  /// Creates a run (the worker makes these; tests of handlers may too).
  public init(key: String, value: Value, attempt: Int, fence: Int64) {
    self.key = key
    self.value = value
    self.attempt = attempt
    self.fence = fence
  }
}

extension PostgresBurstRun: Equatable where Value: Equatable {}
extension PostgresBurstRun: Hashable where Value: Hashable {}
