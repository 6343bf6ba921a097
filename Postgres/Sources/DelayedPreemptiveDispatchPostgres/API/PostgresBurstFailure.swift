/// A burst that had `maxAttempts` runs without success, as
/// ``PostgresDelayedPreemptiveQueue/failures()`` lists it. It is kept in the database, with its
/// value, until ``PostgresDelayedPreemptiveQueue/retryFailure(id:)`` (or
/// ``PostgresDelayedPreemptiveQueue/retryFailure(_:)``) runs it again, or
/// ``PostgresDelayedPreemptiveQueue/discardFailure(id:)`` (or
/// ``PostgresDelayedPreemptiveQueue/discardFailure(_:)``) removes it: never dropped, also when
/// later bursts of its key wait, or new submissions of its key come, which run as usual. A key
/// may have several.
public struct PostgresBurstFailure<Value: Codable & Sendable>: Sendable {
  /// The kept failure's identity, one per kept burst, stable until it is retried or discarded;
  /// ids grow in the order in which failures were kept, across every queue of the database.
  public var id: Int64
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
  public init(id: Int64, key: String, value: Value, attempts: Int, lastError: String) {
    self.id = id
    self.key = key
    self.value = value
    self.attempts = attempts
    self.lastError = lastError
  }

  /// Creates a failure record with the id 0, which no kept failure has.
  public init(key: String, value: Value, attempts: Int, lastError: String) {
    self.init(id: 0, key: key, value: value, attempts: attempts, lastError: lastError)
  }
}

extension PostgresBurstFailure: Equatable where Value: Equatable {}
extension PostgresBurstFailure: Hashable where Value: Hashable {}

/// A kept failure as ``PostgresDelayedPreemptiveQueue/rawFailures()`` lists it: its value as
/// the database stores it, not decoded, so that every kept failure can be read, also one whose
/// value no longer decodes as the queue's `Value`.
public struct PostgresRawBurstFailure: Sendable, Hashable {
  /// The kept failure's identity, as ``PostgresBurstFailure/id``.
  public var id: Int64
  /// The burst's key.
  public var key: String
  /// The stored value, as PostgreSQL's `jsonb` text.
  public var json: String
  /// How many runs the burst had.
  public var attempts: Int
  /// The handler's last error, as ``PostgresBurstFailure/lastError``.
  public var lastError: String

  /// Creates a raw failure record (the queue makes these; tests may too).
  public init(id: Int64, key: String, json: String, attempts: Int, lastError: String) {
    self.id = id
    self.key = key
    self.json = json
    self.attempts = attempts
    self.lastError = lastError
  }
}
