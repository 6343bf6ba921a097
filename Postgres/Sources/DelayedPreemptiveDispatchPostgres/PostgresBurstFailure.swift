/// A burst that had `maxAttempts` runs without success, as
/// ``PostgresDelayedPreemptiveQueue/failures()`` lists it. The row stays in the database until
/// a new `delay` of its key starts a fresh burst,
/// ``PostgresDelayedPreemptiveQueue/retryFailure(_:)`` runs it again, or
/// ``PostgresDelayedPreemptiveQueue/discardFailure(_:)`` removes it.
public struct PostgresBurstFailure<Value: Codable & Sendable>: Sendable {
  /// The burst's key.
  public var key: String
  /// The burst's value, as the handler was given it: its last one, or with `merge: .append`
  /// the concatenation of its arrays.
  public var value: Value
  /// How many runs the burst had: each claim counts, also a run whose worker died or
  /// lost its lease.
  public var attempts: Int
  /// `String(describing:)` of the handler's last error, or, when the last run never ended,
  /// a sentence that says so.
  public var lastError: String

  /// Creates a failure record (the queue makes these; tests may too).
  public init(key: String, value: Value, attempts: Int, lastError: String) {
    self.key = key
    self.value = value
    self.attempts = attempts
    self.lastError = lastError
  }
}

extension PostgresBurstFailure: Equatable where Value: Equatable {}
extension PostgresBurstFailure: Hashable where Value: Hashable {}
