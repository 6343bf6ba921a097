import Foundation
import PostgresNIO

// What an operator does with a queue: look at what runs where, and act on kept failures.
extension PostgresDelayedPreemptiveQueue {
  /// Runs a kept failure again: its row becomes a fresh burst with its kept value, due now.
  /// Returns whether there was one; false for a key without a kept failure (unknown, waiting or
  /// running), which is left as it was.
  ///
  /// The fresh burst starts as a first submission would: attempts back to 0 (it may have
  /// `maxAttempts` runs again), the last error cleared, deadline and first submission set to the
  /// database's now. It wakes sleeping workers at once (a NOTIFY on `dpd_wake`), so a running
  /// worker claims it without waiting for `safetyPoll`. Its next claim takes a new, greater
  /// fence, as every claim does. A ``delay(_:for:value:)`` of the key does the same with a new
  /// value; use this call to run the kept one.
  ///
  /// ```swift
  /// for failure in try await queue.failures() where failure.lastError.contains("timeout") {
  ///   try await queue.retryFailure(failure.key)
  /// }
  /// ```
  ///
  /// Throws, always a ``PostgresDelayedPreemptiveQueueError``: `emptyKey` or `invalidKey` for a
  /// key that cannot be stored (nothing is sent); `databaseUnreachable` when no connection could
  /// be had within `connectionTimeout` (nothing was changed); `outcomeUnknown` when the call was
  /// sent but not confirmed within `connectionTimeout` (retrying is safe: a second call finds no
  /// failure and returns false); `databaseError` when the database refused it.
  @discardableResult public func retryFailure(_ key: String) async throws -> Bool {
    let key = try checked(key)
    let name = name
    let logger = logger
    let retried = try await database("retryFailure", key: key) { connection in
      try await connection.scalar(
        """
        WITH retried AS (
          UPDATE dpd_bursts AS b SET failed = false, attempts = 0, last_error = NULL,
            deadline = now.t, due_at = now.t, first_submitted = now.t
          FROM (SELECT clock_timestamp() AS t) AS now
          WHERE b.name = \(name) AND b.key = \(key) AND b.failed
          RETURNING 1
        )
        SELECT CASE WHEN EXISTS (SELECT 1 FROM retried)
          THEN (SELECT true FROM pg_notify(\(wakeChannel), \(name))) ELSE false END
        """, as: Bool.self, logger: logger) ?? false
    }
    if retried {
      logger.info("kept failure runs again (retryFailure)")
      logger.debug("retryFailure", metadata: ["dpd.key": "\(key)"])
    }
    return retried
  }

  /// Removes a kept failure: its row, with its value and last error, is deleted. Returns whether
  /// there was one; false for a key without a kept failure (unknown, waiting or running), which
  /// is left as it was.
  ///
  /// Throws as ``retryFailure(_:)`` does (after an `outcomeUnknown`, a second call is safe: it
  /// returns false if the first one was applied).
  @discardableResult public func discardFailure(_ key: String) async throws -> Bool {
    let key = try checked(key)
    let name = name
    let logger = logger
    let discarded = try await database("discardFailure", key: key) { connection in
      try await connection.scalar(
        """
        WITH discarded AS (
          DELETE FROM dpd_bursts WHERE name = \(name) AND key = \(key) AND failed RETURNING 1
        )
        SELECT count(*) FROM discarded
        """, as: Int.self, logger: logger) ?? 0 > 0
    }
    if discarded {
      logger.info("kept failure discarded (discardFailure)")
      logger.debug("discardFailure", metadata: ["dpd.key": "\(key)"])
    }
    return discarded
  }

  /// The bursts that a worker of any replica holds at this moment, by key: who runs them, which
  /// attempt and fence, and how long their lease has left. Read-only.
  ///
  /// A burst stays listed from its claim until its end is recorded. A ``PostgresRunningBurst``
  /// with a negative ``PostgresRunningBurst/leaseLeft`` belongs to a worker that died, paused or
  /// lost the database: the next claim of any worker takes it over.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError`
  /// (``PostgresDelayedPreemptiveQueueError``).
  public func runningBursts() async throws -> [PostgresRunningBurst] {
    let name = name
    let logger = logger
    return try await database("runningBursts") { connection in
      var bursts: [PostgresRunningBurst] = []
      let query: PostgresQuery = """
        SELECT key, coalesce(owner, ''), attempts, coalesce(fence, 0),
          (extract(epoch FROM due_at - clock_timestamp()) * 1000)::float8
        FROM dpd_bursts WHERE name = \(name) AND claim IS NOT NULL AND NOT failed ORDER BY key
        """
      for try await row in try await connection.query(query, logger: logger) {
        let (key, owner, attempt, fence, leftMilliseconds) = try row.decode(
          (String, String, Int, Int64, Double).self)
        bursts.append(
          PostgresRunningBurst(
            key: key, owner: owner, attempt: attempt, fence: fence,
            leaseLeft: .milliseconds(leftMilliseconds)))
      }
      return bursts
    }
  }

  /// The kept failures with their values as stored (PostgreSQL's `jsonb` text), by key, whatever
  /// `Value` is: ``failures()`` decodes these, and the operator's tool shows them as they are,
  /// for a queue of any `Value` type, also values that no longer decode.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError`.
  package func storedFailures() async throws -> [StoredFailure] {
    let name = name
    let logger = logger
    return try await database("failures") { connection in
      var failures: [StoredFailure] = []
      let query: PostgresQuery = """
        SELECT key, value::text, attempts, coalesce(last_error, '') FROM dpd_bursts
        WHERE name = \(name) AND failed ORDER BY key
        """
      for try await row in try await connection.query(query, logger: logger) {
        let (key, json, attempts, lastError) = try row.decode((String, String, Int, String).self)
        failures.append(
          StoredFailure(key: key, json: json, attempts: attempts, lastError: lastError))
      }
      return failures
    }
  }

  /// Every queue name that has rows in the database (waiting, running or failed bursts), with
  /// how many, at most `limit` names: for the operator's tool, to say which names are in use when
  /// the one it was given has no rows.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError` (SQLSTATE `42P01` when no
  /// queue was ever migrated in this database).
  package func namesInUse(limit: Int = 20) async throws -> [StoredQueueName] {
    let logger = logger
    return try await database("namesInUse") { connection in
      var names: [StoredQueueName] = []
      let query: PostgresQuery = """
        SELECT name, count(*) FROM dpd_bursts WHERE NOT idle GROUP BY name ORDER BY name
        LIMIT \(limit)
        """
      for try await row in try await connection.query(query, logger: logger) {
        let (name, rows) = try row.decode((String, Int).self)
        names.append(StoredQueueName(name: name, rows: rows))
      }
      return names
    }
  }
}

/// A kept failure as ``PostgresDelayedPreemptiveQueue/storedFailures()`` reads it: its value is
/// the stored JSON, not decoded.
package struct StoredFailure: Sendable, Hashable {
  package var key: String
  /// The stored value, as PostgreSQL's `jsonb` text.
  package var json: String
  package var attempts: Int
  package var lastError: String
}

/// A queue name with rows in the database, and how many.
package struct StoredQueueName: Sendable, Hashable {
  package var name: String
  package var rows: Int
}
