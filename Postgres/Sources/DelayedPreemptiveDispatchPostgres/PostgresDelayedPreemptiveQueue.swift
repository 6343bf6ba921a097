import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO

/// Keyed bursts shared by every replica of a service through one PostgreSQL database: the
/// in-process `KeyedDelayedPreemptiveActor`'s rules (K1), with the work stored as one row per key.
///
/// Any replica may call ``delay(_:for:value:)``; any replica that calls
/// ``run(concurrency:handler:)`` runs due bursts. A burst runs once, on one replica, with its
/// last value (P2), never beside another run of its key (P3); a replica that dies mid-run hands
/// the burst to another one once its `lease` has passed (P4). A handler that throws is retried
/// with exponential backoff and, after `maxAttempts`, kept in ``failures()`` (P5).
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)
/// let reindex = PostgresDelayedPreemptiveQueue<Edit>(
///   client: client, configuration: configuration, name: "reindex",
///   options: DelayOptions(maxWait: .seconds(30)))
/// try await reindex.migrate()
/// try await reindex.delay(document.id, for: .seconds(2), value: edit)   // any replica
/// try await reindex.run { documentID, edit in try await index(documentID, edit) }  // workers
/// ```
///
/// All instants come from the database's clock (`clock_timestamp()`), so replicas with skewed
/// clocks agree on every deadline. The client must be running (`client.run()`) for any call to
/// complete.
public struct PostgresDelayedPreemptiveQueue<Value: Codable & Sendable>: Sendable {
  let client: PostgresClient
  let endpoint: Endpoint
  let submissions = SubmissionBatcher<Value>()
  /// The queue's name: its rows in `dpd_bursts` are those with this `name`.
  public let name: String
  /// The options given at `init`.
  public let options: DelayOptions
  /// How long a claimed burst stays claimed without a renewal.
  public let lease: Duration
  /// How many times a burst's handler may throw before the burst is kept in ``failures()``.
  public let maxAttempts: Int

  /// The first retry waits this long; each further one twice as long as the one before, up to
  /// five minutes. Default: one second.
  public var retryBackoff: Duration = .seconds(1)
  /// The longest a sleeping worker waits before it looks for due work again, in case a wake-up
  /// was missed (a NOTIFY is sent only when a submission moves the earliest deadline). Default:
  /// one second.
  public var safetyPoll: Duration = .seconds(1)
  /// How long any call may wait for a database connection before it throws
  /// ``PostgresDelayedPreemptiveQueueError/databaseUnreachable(host:port:reason:)``. Default:
  /// ten seconds.
  public var connectionTimeout: Duration = .seconds(10)

  /// Creates a handle on the queue `name` in the database that `client` reaches; several
  /// handles (on several replicas) with one `name` share its bursts.
  ///
  /// Nothing is written until the first call. `name` separates queues that share the database;
  /// an empty name is a programmer error and stops the program with a message. `options`
  /// applies as in-process (`deadlinePolicy`, `maxWait`; `tolerance` is ignored: the database
  /// gives no timer leeway); `options.leading` is not supported here and stops the program with
  /// a message. `lease`: how long a claimed burst stays claimed without a renewal before another
  /// replica may take it over; the running replica renews it every third of `lease`.
  /// `maxAttempts`: how many times a burst's handler may throw before the burst is kept in
  /// ``failures()``.
  ///
  /// A database that cannot be reached is reported without its host and port, which the client
  /// does not expose; use ``init(client:configuration:name:options:lease:maxAttempts:)`` to
  /// have them named.
  public init(
    client: PostgresClient, name: String, options: DelayOptions = DelayOptions(),
    lease: Duration = .seconds(30), maxAttempts: Int = 5
  ) {
    self.init(
      client: client, endpoint: Endpoint(host: "(host not given)", port: 0), name: name,
      options: options, lease: lease, maxAttempts: maxAttempts)
  }

  /// The same as ``init(client:name:options:lease:maxAttempts:)``, given the configuration that
  /// `client` was made with, so that an unreachable database is reported by host and port.
  public init(
    client: PostgresClient, configuration: PostgresClient.Configuration, name: String,
    options: DelayOptions = DelayOptions(), lease: Duration = .seconds(30), maxAttempts: Int = 5
  ) {
    self.init(
      client: client,
      endpoint: Endpoint(
        host: configuration.host ?? configuration.unixSocketPath ?? "(unknown host)",
        port: configuration.port ?? 0),
      name: name, options: options, lease: lease, maxAttempts: maxAttempts)
  }

  init(
    client: PostgresClient, endpoint: Endpoint, name: String, options: DelayOptions,
    lease: Duration, maxAttempts: Int
  ) {
    requireArgument(
      !name.isEmpty, "PostgresDelayedPreemptiveQueue: name must not be empty")
    requireArgument(
      !options.leading,
      "PostgresDelayedPreemptiveQueue: options.leading is not supported across replicas; "
        + "use a DelayOptions with leading: false")
    requireArgument(
      lease >= .milliseconds(10), "PostgresDelayedPreemptiveQueue: lease must be at least 10 ms")
    requireArgument(
      maxAttempts >= 1, "PostgresDelayedPreemptiveQueue: maxAttempts must be at least 1")
    if let maxWait = options.maxWait {
      requireArgument(
        maxWait >= .zero, "PostgresDelayedPreemptiveQueue: options.maxWait must not be negative")
    }
    self.client = client
    self.endpoint = endpoint
    self.name = name
    self.options = options
    self.lease = lease
    self.maxAttempts = maxAttempts
  }

  /// Creates or upgrades the schema (tables `dpd_schema` and `dpd_bursts`); idempotent, and safe
  /// to call from every replica at start: concurrent calls wait for the first one.
  ///
  /// Throws ``PostgresDelayedPreemptiveQueueError/newerSchema(found:supported:)`` when a newer
  /// release of this package has migrated the database.
  public func migrate() async throws {
    do {
      _ = try await database { try await client.query(Schema.migration) }
    } catch let error as PSQLError
      where error.serverInfo?[.sqlState] == Schema.newerSchemaState
    {
      let found = Int(error.serverInfo?[.message] ?? "") ?? -1
      throw PostgresDelayedPreemptiveQueueError.newerSchema(
        found: found, supported: Schema.version)
    }
  }

  /// Submits `value` for `key`: starts the key's burst with a deadline `duration` from the
  /// database's now, or moves the pending burst's deadline (`.extend`: only later; `.restart`:
  /// to now + `duration`), bounded by the burst's first submission plus `maxWait`. The value
  /// replaces the burst's value: the handler gets the last one.
  ///
  /// When the key's handler is running, the submission starts a new burst that runs after that
  /// run has finished (P3). When the key's last burst failed for good, it starts a fresh burst
  /// and clears the failure. One `INSERT … ON CONFLICT DO UPDATE`; it wakes sleeping workers
  /// only when it makes the earliest deadline earlier. Concurrent calls on one instance (and
  /// its copies) are sent together as one multi-row upsert; each call returns once its
  /// submission is stored.
  ///
  /// Throws ``PostgresDelayedPreemptiveQueueError/emptyKey`` for an empty key and
  /// ``PostgresDelayedPreemptiveQueueError/valueNotEncodable(key:reason:)`` for a value that
  /// does not encode as JSON; in both cases nothing is written.
  public func delay(_ key: String, for duration: Duration, value: Value) async throws {
    _ = try await submit(key, for: duration, value: value)
  }

  /// ``delay(_:for:value:)``, returning whether the submission sent a wake-up NOTIFY.
  func submit(_ key: String, for duration: Duration, value: Value) async throws -> Bool {
    let submission = DelayStatement.Submission(
      key: try checked(key), json: try ValueCodec.encode(value, key: key),
      delayMilliseconds: duration.milliseconds)
    return try await submissions.submit(submission, using: self)
  }

  /// Writes a batch of submissions with distinct keys in one statement.
  func upsert(_ batch: [DelayStatement.Submission]) async throws -> Bool {
    let statement = DelayStatement(
      name: name, submissions: batch, restart: options.deadlinePolicy == .restart,
      maxWaitMilliseconds: options.maxWait?.milliseconds)
    return try await database { try await client.rows(statement).first ?? false }
  }

  /// Cancels the key's pending burst: its handler will not run for it. Returns whether there
  /// was one. A run in progress is not interrupted; a burst waiting behind it (submitted during
  /// the run) is cancelled. A failed burst stays in ``failures()``. One gap: the row keeps the
  /// cancelled burst's value until the run ends, so if the running replica dies, the re-run
  /// after its lease gets that value.
  @discardableResult public func cancel(_ key: String) async throws -> Bool {
    let key = try checked(key)
    return try await database {
      try await client.scalar(
        """
        WITH waiting AS (
          DELETE FROM dpd_bursts
          WHERE name = \(name) AND key = \(key) AND claim IS NULL AND NOT failed RETURNING 1
        ), behind AS (
          UPDATE dpd_bursts SET claimed_generation = generation
          WHERE name = \(name) AND key = \(key) AND claim IS NOT NULL
            AND generation > claimed_generation
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM waiting) + (SELECT count(*) FROM behind)
        """, as: Int.self) ?? 0 > 0
    }
  }

  /// Makes the key's pending burst due now and wakes the workers; returns whether there was
  /// one. A burst waiting behind a running one becomes due when that run has finished.
  @discardableResult public func flush(_ key: String) async throws -> Bool {
    let key = try checked(key)
    return try await database {
      try await client.scalar(
        """
        WITH flushed AS (
          UPDATE dpd_bursts SET deadline = clock_timestamp(),
            due_at = CASE WHEN claim IS NULL THEN clock_timestamp() ELSE due_at END
          WHERE name = \(name) AND key = \(key) AND NOT failed
            AND (claim IS NULL OR generation > claimed_generation)
          RETURNING 1
        )
        SELECT CASE WHEN EXISTS (SELECT 1 FROM flushed)
          THEN (SELECT true FROM pg_notify(\(wakeChannel), \(name))) ELSE false END
        """, as: Bool.self) ?? false
    }
  }

  /// Whether the key has work that has not finished: a burst waiting for its deadline or a
  /// retry, or running. A failed burst is not pending (see ``failures()``).
  public func isPending(_ key: String) async throws -> Bool {
    let key = try checked(key)
    return try await database {
      try await client.scalar(
        """
        SELECT EXISTS (
          SELECT 1 FROM dpd_bursts WHERE name = \(name) AND key = \(key) AND NOT failed)
        """, as: Bool.self) ?? false
    }
  }

  /// How many keys have work that has not finished (see ``isPending(_:)``), over all replicas.
  /// Zero means every submission so far has run or failed for good.
  public func pendingCount() async throws -> Int {
    try await database {
      try await client.scalar(
        "SELECT count(*) FROM dpd_bursts WHERE name = \(name) AND NOT failed", as: Int.self) ?? 0
    }
  }

  /// Bursts whose handler threw `maxAttempts` times, by key, kept until a new
  /// ``delay(_:for:value:)`` of their key starts a fresh burst.
  public func failures() async throws -> [PostgresBurstFailure<Value>] {
    let rows = try await database {
      var rows: [(String, String, Int, String)] = []
      let query: PostgresQuery = """
        SELECT key, value::text, attempts, coalesce(last_error, '') FROM dpd_bursts
        WHERE name = \(name) AND failed ORDER BY key
        """
      for try await row in try await client.query(query) {
        rows.append(try row.decode((String, String, Int, String).self))
      }
      return rows
    }
    return try rows.map { key, json, attempts, lastError in
      PostgresBurstFailure(
        key: key, value: try ValueCodec.decode(Value.self, from: json, key: key),
        attempts: attempts, lastError: lastError)
    }
  }

  private func checked(_ key: String) throws -> String {
    guard !key.isEmpty else { throw PostgresDelayedPreemptiveQueueError.emptyKey }
    return key
  }
}
