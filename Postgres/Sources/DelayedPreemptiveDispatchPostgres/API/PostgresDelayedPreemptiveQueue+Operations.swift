@_spi(Preconditions) import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO

// What an operator does with a queue: look at what runs where, and act on kept failures.
extension PostgresDelayedPreemptiveQueue {
  /// Runs the key's kept failures again, oldest first, each as a burst of its own with its kept
  /// value. Returns whether there was one; false for a key without a kept failure (unknown,
  /// waiting or running), which is left as it was.
  ///
  /// A retried failure re-enters the key's bursts without being merged with any other
  /// (<doc:OperatingAQueue#Act-on-kept-failures>): with no burst of its key, it is due now; with a
  /// burst of its key that runs, or waits for the retry of a run that threw, it runs right after
  /// that one; with a burst waiting for its first run, it runs before it, now, and the waiting
  /// burst keeps its deadline. Each starts as a first submission would: attempts back to 0 (it
  /// may have `maxAttempts` runs again), no last error. It takes no submissions: a
  /// ``delay(_:for:value:)`` of its key meanwhile starts or joins a burst behind it, so its value
  /// stays its own. Under `minimumSpacing` it starts no sooner than the spacing after the key's
  /// last run. Once retried, it is a pending burst like any other (``cancel(_:)`` cancels it), and
  /// failing `maxAttempts` times again keeps it again, under a new id. The call wakes sleeping
  /// workers at once (a NOTIFY on `dpd_wake`), so a running worker claims it without waiting for
  /// `safetyPoll`. Its next claim takes a new, greater fence, as every claim does.
  ///
  /// ```swift
  /// for failure in try await queue.failures() where failure.lastError.contains("timeout") {
  ///   try await queue.retryFailure(id: failure.id)
  /// }
  /// ```
  ///
  /// Throws, always a ``PostgresDelayedPreemptiveQueueError``: `emptyKey` or `invalidKey` for a
  /// key that cannot be stored (nothing is sent); `databaseUnreachable` when no connection could
  /// be had within `connectionTimeout` (nothing was changed); `outcomeUnknown` when the call was
  /// sent but not confirmed within `connectionTimeout` (retrying is safe: a second call finds no
  /// failure and returns false); `databaseError` when the database refused it.
  @discardableResult public func retryFailure(_ key: String) async throws -> Bool {
    return try await retryFailures(.key(try checked(key))) > 0
  }

  /// Runs one kept failure again, by the ``PostgresBurstFailure/id`` that ``failures()`` and
  /// ``rawFailures()`` report, as ``retryFailure(_:)`` runs each of a key's. Returns whether
  /// there was one; false for an id that no kept failure of this queue has (already retried or
  /// discarded, or another queue's).
  ///
  /// Throws as ``retryFailure(_:)`` does, but for the key.
  @discardableResult public func retryFailure(id: Int64) async throws -> Bool {
    try await retryFailures(.id(id)) > 0
  }

  /// Removes the key's kept failures, with their values and last errors. Returns whether there
  /// was one; false for a key without a kept failure (unknown, waiting or running), which is
  /// left as it was. The key's waiting or running bursts are not touched.
  ///
  /// Throws as ``retryFailure(_:)`` does (after an `outcomeUnknown`, a second call is safe: it
  /// returns false if the first one was applied).
  @discardableResult public func discardFailure(_ key: String) async throws -> Bool {
    return try await discardFailures(.key(try checked(key))) > 0
  }

  /// Removes one kept failure, by its id, as ``discardFailure(_:)`` removes a key's. Returns
  /// whether there was one.
  ///
  /// Throws as ``retryFailure(id:)`` does.
  @discardableResult public func discardFailure(id: Int64) async throws -> Bool {
    try await discardFailures(.id(id)) > 0
  }

  /// Retries the kept failures of this queue that `selection` picks, in one statement (see
  /// ``RetryFailuresStatement``); returns how many.
  private func retryFailures(_ selection: FailureSelection) async throws -> Int {
    try await changeFailures(
      "retryFailure", selection,
      query: RetryFailuresStatement(
        name: name, selection: selection, minimumSpacingMilliseconds: minimumSpacingMilliseconds
      ).query,
      changed: "kept failure runs again")
  }

  /// Deletes the kept failures of this queue that `selection` picks (see
  /// ``DiscardFailuresStatement``); returns how many.
  private func discardFailures(_ selection: FailureSelection) async throws -> Int {
    try await changeFailures(
      "discardFailure", selection,
      query: DiscardFailuresStatement(name: name, selection: selection).query,
      changed: "kept failure discarded")
  }

  /// Sends `query`, the statement of the operator's `call` on the kept failures that `selection`
  /// picks, which selects how many it changed; logs `changed` when there was one.
  private func changeFailures(
    _ call: String, _ selection: FailureSelection, query: PostgresQuery, changed: String
  ) async throws -> Int {
    let logger = logger
    let count = try await database(call, key: selection.key) { connection in
      try await connection.scalar(query, as: Int.self, logger: logger) ?? 0
    }
    if count > 0 {
      logger.info("\(changed) (\(call))", metadata: ["dpd.failures": "\(count)"])
      logger.debug(
        "\(call)", metadata: ["dpd.key": "\(selection.key ?? "")", "dpd.failure": "\(selection)"])
    }
    return count
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
    let statement = RunningBurstsStatement(name: name)
    let logger = logger
    return try await database("runningBursts") {
      try await $0.rows(statement, logger: logger).map(\.burst)
    }
  }

  /// Every kept failure with its stored JSON (PostgreSQL's `jsonb` text), whatever `Value` is,
  /// also values that no longer decode: oldest first (by ``PostgresRawBurstFailure/id``).
  /// ``failures()`` lists those whose value decodes; the operator's tool shows these, for a queue
  /// of any `Value` type.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError`; `CancellationError`
  /// when the calling task is cancelled before the call was sent.
  public func rawFailures() async throws -> [PostgresRawBurstFailure] {
    let statement = FailuresStatement(name: name)
    let logger = logger
    return try await database("failures") {
      try await $0.rows(statement, logger: logger).map(\.failure)
    }
  }

  /// What the queue holds now, for an operator's view: the bursts of the chosen keys that wait,
  /// earliest due first, with when each is due; those that run, by key, with their lease; and
  /// their kept failures, oldest first, with each value as its stored JSON. Each list holds at
  /// most `limit` entries, and the snapshot counts each in all. Its ``PostgresQueueSnapshot/isKnown``
  /// says whether a queue of this name was ever migrated in the database, so that a mistyped
  /// name is told apart from an idle queue. Read-only; the operator's tool's `state` shows it.
  ///
  /// ```swift
  /// let snapshot = try await queue.snapshot(of: .prefix("doc-"), limit: 50)
  /// print("\(snapshot.waitingCount) waiting, \(snapshot.runningCount) running")
  /// ```
  ///
  /// The three lists are read one after the other on one connection, not in one transaction: a
  /// burst that starts or ends meanwhile may show in two lists or in none.
  ///
  /// - Parameters:
  ///   - keys: Which keys to show: every key (the default), those with a prefix, or one.
  ///   - limit: The most entries of each list; at least 1.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError` (SQLSTATE `42P01` when no
  /// queue was ever migrated in this database); `CancellationError` when the calling task is
  /// cancelled before the call was sent.
  public func snapshot(
    of keys: PostgresQueueSnapshot.Keys = .all, limit: Int = 100
  ) async throws -> PostgresQueueSnapshot {
    requireArgument(limit >= 1, "snapshot(of:limit:): limit must be at least 1, not \(limit)")
    let (name, logger) = (name, logger)
    return try await database("snapshot") { connection in
      let known = try await connection.rows(QueueKnownStatement(name: name), logger: logger)
      let waiting = try await connection.rows(
        WaitingBurstsStatement(name: name, keys: keys, limit: limit), logger: logger)
      let running = try await connection.rows(
        RunningBurstsStatement(name: name, keys: keys, limit: limit), logger: logger)
      let failures = try await connection.rows(
        FailuresStatement(name: name, keys: keys, limit: limit), logger: logger)
      return PostgresQueueSnapshot(
        isKnown: known.first ?? false, waiting: waiting.map(\.burst),
        waitingCount: waiting.first?.count ?? 0, running: running.map(\.burst),
        runningCount: running.first?.count ?? 0, failures: failures.map(\.failure),
        failureCount: failures.first?.count ?? 0)
    }
  }

  /// Every queue name that has rows in the database (waiting or running bursts, and kept
  /// failures), with how many, at most `limit` names: for the operator's tool, to say which
  /// names are in use when the one it was given has no rows.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError` (SQLSTATE `42P01` when no
  /// queue was ever migrated in this database).
  package func namesInUse(limit: Int = 20) async throws -> [StoredQueueName] {
    let statement = NamesInUseStatement(limit: limit)
    let logger = logger
    return try await database("namesInUse") { try await $0.rows(statement, logger: logger) }
  }
}

/// A queue name with rows in the database, and how many.
package struct StoredQueueName: Sendable, Hashable {
  package var name: String
  package var rows: Int
}
