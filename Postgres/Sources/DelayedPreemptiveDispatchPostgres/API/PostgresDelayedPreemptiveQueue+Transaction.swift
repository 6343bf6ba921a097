import Logging
import PostgresNIO

// Calls that join the caller's transaction (rule P14): the same statements as the calls without
// `on:`, sent on the caller's connection instead of one of the queue's pool.
extension PostgresDelayedPreemptiveQueue {
  /// Submits inside the transaction open on `connection` (for example within
  /// `PostgresClient.withTransaction`): the submission exists if and only if that transaction
  /// commits, and workers learn of it at commit, when PostgreSQL delivers the wake-up `NOTIFY`.
  /// The rules are those of ``delay(_:for:value:)``, applied by the same function in the
  /// database (`dpd_submit`); the call is one statement on `connection`, never batched with other
  /// callers' submissions. On a connection with no transaction open, it commits at once, as a
  /// single statement does.
  ///
  /// ```swift
  /// try await client.withTransaction(logger: logger) { connection in
  ///   try await connection.query(
  ///     "UPDATE documents SET body = \(edit.text) WHERE id = \(documentID)", logger: logger)
  ///   try await reindex.delay(documentID, for: .seconds(2), value: edit, on: connection)
  /// }  // rolled back: no reindex; committed: one, 2 s after the last change
  /// ```
  ///
  /// The `dpd.postgres.submissions` metric counts the call when it returns: the package cannot
  /// see whether the caller's transaction then commits. The call is not bounded by
  /// `connectionTimeout`, and cancelling the calling task does not withdraw it: the caller owns
  /// the connection and its transaction.
  ///
  /// Throws, always a ``PostgresDelayedPreemptiveQueueError``: `emptyKey`, `invalidKey` or
  /// `valueNotEncodable` as ``delay(_:for:value:)`` does, before anything is sent;
  /// `databaseError` when the database refused the statement (the transaction is then aborted,
  /// as for any failed statement in it); `outcomeUnknown` when the connection broke after the
  /// statement was sent (inside a transaction, nothing of it was committed then).
  public func delay(
    _ key: String, for duration: Duration, value: Value, on connection: PostgresConnection
  ) async throws {
    let statement = delayStatement([try encoded(key, for: duration, value: value)])
    let logger = logger
    _ = try await onCallersConnection("delay", key: key) {
      try await statement.send(on: connection, committing: false, logger: logger)
    }
    metrics.submissions.increment()
  }

  /// ``cancel(_:)`` inside the transaction open on `connection`: the cancellation holds if and
  /// only if that transaction commits. Same rules, through the same function in the database
  /// (`dpd_cancel`). Throws as ``delay(_:for:value:on:)`` does, but for the value.
  @discardableResult public func cancel(_ key: String, on connection: PostgresConnection)
    async throws -> Bool
  {
    let statement = CancelStatement(
      name: name, key: try checked(key), minimumSpacingMilliseconds: minimumSpacingMilliseconds)
    let logger = logger
    return try await onCallersConnection("cancel", key: key) {
      try await connection.rows(statement, logger: logger).first ?? false
    }
  }

  /// ``flush(_:)`` inside the transaction open on `connection`: the flushed bursts become due,
  /// and workers are woken, when that transaction commits; rolled back, nothing changed. Same
  /// rules, through the same function in the database (`dpd_flush`). Throws as
  /// ``delay(_:for:value:on:)`` does, but for the value.
  @discardableResult public func flush(_ key: String, on connection: PostgresConnection)
    async throws -> Bool
  {
    let statement = FlushStatement(name: name, key: try checked(key))
    let logger = logger
    return try await onCallersConnection("flush", key: key) {
      try await connection.rows(statement, logger: logger).first ?? false
    }
  }

  /// Runs a statement on the caller's connection, with every error as the package's typed one.
  private func onCallersConnection<Result: Sendable>(
    _ operation: String, key: String, _ body: () async throws -> Result
  ) async throws -> Result {
    do {
      return try await body()
    } catch {
      throw CallFailure(operation: operation, key: key, endpoint: endpoint)
        .wrapping(error, sent: true)
    }
  }
}
