import DelayedPreemptiveDispatch
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P15 against the real server: `migrate()` installs `dpd_delay`, `dpd_cancel` and
/// `dpd_flush`, which apply the options stored under the queue's name, so that a trigger, a
/// service in another language or an operator in `psql` submits with the Swift queue's rules.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresSQLFunctionTests {
  static let logger = Logger(label: "test")

  /// "Reindex each document a minute after its last change", as a trigger: many updates of one
  /// document are one run, with its last body. The updates are a minute apart at most (a
  /// shorter delay let a loaded machine's updates come after their burst was due, which then
  /// ends, T7); `flush` then makes each document's burst due, so the test does not wait.
  @Test func aTriggersSubmissionsAreDebounced() async throws {
    try await TestDatabase.withQueue("trigger") { queue, client in
      let table = "dpd_test_documents_\(UUID().uuidString.prefix(8).lowercased())"
      try await client.query(
        PostgresQuery(
          unsafeSQL: """
            CREATE TABLE \(table) (id integer PRIMARY KEY, body text NOT NULL);
            """))
      try await client.query(
        PostgresQuery(
          unsafeSQL: """
            CREATE FUNCTION \(table)_reindex() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              PERFORM dpd_delay(TG_ARGV[0], NEW.id::text, interval '1 minute',
                to_jsonb(NEW.body));
              RETURN NEW;
            END $$;
            """))
      try await client.query(
        PostgresQuery(
          unsafeSQL: """
            CREATE TRIGGER reindex AFTER INSERT OR UPDATE ON \(table)
            FOR EACH ROW EXECUTE FUNCTION \(table)_reindex('\(queue.name)');
            """))
      defer {
        Task {
          try? await TestDatabase.administer("DROP TABLE IF EXISTS \(table)")
          try? await TestDatabase.administer("DROP FUNCTION IF EXISTS \(table)_reindex()")
        }
      }
      try await client.query(
        PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (1, 'one v1'), (2, 'two v1')"))
      for version in 2...6 {
        try await client.query(
          PostgresQuery(unsafeSQL: "UPDATE \(table) SET body = 'one v\(version)' WHERE id = 1"))
      }
      try await client.query(
        PostgresQuery(unsafeSQL: "UPDATE \(table) SET body = 'two v2' WHERE id = 2"))
      // A rolled-back update submits nothing.
      await #expect(throws: PostgresTransactionError.self) {
        try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
          try await connection.query(
            PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (3, 'three')"),
            logger: Self.logger)
          throw CancellationError()
        }
      }
      #expect(try await queue.pendingCount() == 2)
      #expect(try await queue.flush("1"))
      #expect(try await queue.flush("2"))
      let runs = RunLog()
      try await queue.withWorker(handler: { key, value in try await runs.record(key, value) }) {
        () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(await runs.values("1") == ["one v6"])
      #expect(await runs.values("2") == ["two v2"])
      #expect(await runs.count("3") == 0)
    }
  }

  /// `dpd_delay` applies the queue's stored options: here `maxSubmissions: 2` and `.restart`
  /// and the named parameters override them for one call.
  @Test func theStoredOptionsApplyAndNamedParametersOverrideThem() async throws {
    try await TestDatabase.withQueue(
      "sql-options", options: DelayOptions(deadlinePolicy: .restart, maxSubmissions: 2)
    ) { queue, client in
      let stored = try await Self.row(
        client,
        """
        SELECT deadline_policy, coalesce(max_submissions, -1)::text, merge FROM dpd_queues
        WHERE name = \(queue.name)
        """)
      #expect(stored == ["restart", "2", "replace"])
      // Two submissions fill the burst: it is due at once, although its delay is an hour.
      try await Self.sql(client, "SELECT dpd_delay(\(queue.name), 'k', '1 hour', '\"a\"')")
      #expect(try await PostgresTransactionalSubmissionTests.dueInSeconds(client, queue, "k") > 60)
      try await Self.sql(client, "SELECT dpd_delay(\(queue.name), 'k', '1 hour', '\"b\"')")
      #expect(try await PostgresTransactionalSubmissionTests.dueInSeconds(client, queue, "k") <= 0)
      // An override for one call: a burst of one submission is full at once.
      try await Self.sql(
        client,
        "SELECT dpd_delay(\(queue.name), 'o', '1 hour', '\"o\"', max_submissions => 1)")
      #expect(try await PostgresTransactionalSubmissionTests.dueInSeconds(client, queue, "o") <= 0)
      // `dpd_flush` and `dpd_cancel` act as `flush` and `cancel` do: a flushed burst is due now
      // and no longer pending (rule 4: flush ends the burst), so a cancel leaves it to run.
      try await Self.sql(client, "SELECT dpd_delay(\(queue.name), 'f', '1 hour', '\"f\"')")
      #expect(try await Self.bool(client, "SELECT dpd_flush(\(queue.name), 'f')"))
      #expect(try await PostgresTransactionalSubmissionTests.dueInSeconds(client, queue, "f") <= 0)
      #expect(try await !Self.bool(client, "SELECT dpd_flush(\(queue.name), 'f')"))
      #expect(try await !Self.bool(client, "SELECT dpd_cancel(\(queue.name), 'f')"))
      try await Self.sql(client, "SELECT dpd_delay(\(queue.name), 'c', '1 hour', '\"c\"')")
      #expect(try await Self.bool(client, "SELECT dpd_cancel(\(queue.name), 'c')"))
      #expect(try await !Self.bool(client, "SELECT dpd_cancel(\(queue.name), 'c')"))
      #expect(try await !Self.bool(client, "SELECT dpd_flush(\(queue.name), 'c')"))
      #expect(try await !Self.bool(client, "SELECT dpd_flush(\(queue.name), 'unknown')"))
      let runs = RunLog()
      try await queue.withWorker(handler: { key, value in try await runs.record(key, value) }) {
        () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(await runs.values("k") == ["b"])
      #expect(await runs.values("o") == ["o"])
      #expect(await runs.values("f") == ["f"])
      #expect(await runs.count("c") == 0)
    }
  }

  /// A SQL caller's bad input gets an error that names the function and the parameter.
  @Test func badInputFromSQLIsRefusedWithAClearMessage() async throws {
    try await TestDatabase.withClient { client, configuration in
      let queue = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("sql-bad"),
        merge: .append)
      try await queue.migrate()
      let replacing = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("sql-bad"))
      try await replacing.migrate()
      let name = queue.name
      let cases: [(sql: String, state: String, message: String)] = [
        (
          "SELECT dpd_delay('no-such-queue-\(UUID())', 'k', '1 s', '[1]')",
          DatabaseFunctions.unknownQueueState, "was migrated"
        ),
        (
          "SELECT dpd_delay('\(name)', '', '1 s', '[1]')", "22023",
          "dpd_delay: key must not be empty"
        ),
        ("SELECT dpd_delay('\(name)', 'k', '1 s', '\"x\"')", "22023", "value must be a JSON array"),
        (
          "SELECT dpd_delay('\(name)', 'k', NULL, '[1]')", "22004",
          "dpd_delay: delay must not be null"
        ),
        (
          "SELECT dpd_delay('\(name)', 'k', '1 s', '[1]', deadline_policy => 'sometimes')",
          "22023", "deadline_policy must be"
        ),
        (
          "SELECT dpd_delay('\(name)', repeat('k', 1025), '1 s', '[1]')", "22023",
          "at most 1024 bytes"
        ),
        ("SELECT dpd_cancel('\(name)', '')", "22023", "dpd_cancel: key must not be empty"),
        // As strict as Swift: what the Swift options refuse as a programmer error, SQL refuses
        // naming the parameter; an unknown queue is DPD02 for dpd_cancel as for dpd_delay.
        (
          "SELECT dpd_delay('\(name)', 'k', '1 s', '[1]', max_wait => '-1 s')", "22023",
          "dpd_delay: max_wait must not be negative"
        ),
        (
          "SELECT dpd_delay('\(name)', 'k', '1 s', '[1]', minimum_spacing => '-1 ms')", "22023",
          "dpd_delay: minimum_spacing must not be negative"
        ),
        (
          "SELECT dpd_cancel('no-such-queue-\(UUID())', 'k')", DatabaseFunctions.unknownQueueState,
          "dpd_cancel: no queue named"
        ),
        (
          "SELECT dpd_delay('\(replacing.name)', 'k', '1 s', '\"x\"', merge => 'append')", "22023",
          "merge => 'append' (this call's, over the 'replace' of queue '\(replacing.name)') "
            + "appends values: value must be a JSON array, not string"
        ),
        ("SELECT dpd_flush('', 'k')", "22023", "dpd_flush: queue must not be empty"),
      ]
      for (sql, state, message) in cases {
        do {
          for try await _ in try await client.query(PostgresQuery(unsafeSQL: sql)) {}
          Issue.record("accepted: \(sql)")
        } catch let error as PSQLError {
          #expect(error.serverInfo?[.sqlState] == state, "\(sql)")
          #expect(error.serverInfo?[.message]?.contains(message) == true, "\(sql): \(error)")
        }
      }
      #expect(try await queue.pendingCount() == 0)
      // A good one after them: an array is appended.
      try await Self.sql(client, "SELECT dpd_delay(\(name), 'k', '1 hour', '[\"a\"]')")
      try await Self.sql(client, "SELECT dpd_delay(\(name), 'k', '1 hour', '[\"b\"]')")
      #expect(
        try await Self.row(
          client, "SELECT value::text FROM dpd_bursts WHERE name = \(name) AND key = 'k'")
          == [#"["a", "b"]"#])
      // A negative delay counts as zero, as in Swift: due at once.
      try await Self.sql(client, "SELECT dpd_delay(\(name), 'now', '-5 s', '[\"c\"]')")
      #expect(
        try await Self.bool(
          client,
          "SELECT due_at <= clock_timestamp() FROM dpd_bursts WHERE name = \(name) AND key = 'now'"
        ))
      // The Swift `cancel` gives minimum_spacing, so it needs no stored options.
      let unmigrated = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("sql-none"))
      #expect(try await unmigrated.cancel("k") == false)
    }
  }

  /// The last replica to migrate stores its options, and says so when they differ.
  @Test func aReplicaWithOtherOptionsWarnsAndWins() async throws {
    let logs = LogCollector()
    try await TestDatabase.withClient { client, configuration in
      let name = TestDatabase.uniqueName("sql-warn")
      let first = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: name)
      try await first.migrate()
      let same = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: name, logger: logs.logger())
      try await same.migrate()
      #expect(!logs.contains("options differ", atLeast: .warning))
      let other = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: name,
        options: DelayOptions(maxWait: .seconds(5), minimumSpacing: .seconds(1)),
        logger: logs.logger())
      try await other.migrate()
      #expect(logs.contains("options differ", atLeast: .warning), "\(logs.lines)")
      let stored = try await Self.row(
        client,
        """
        SELECT max_wait_ms::int::text, minimum_spacing_ms::int::text FROM dpd_queues
        WHERE name = \(name)
        """)
      #expect(stored == ["5000", "1000"])
    }
  }

  /// A value from SQL that does not decode as the queue's `Value` is kept as a failure when its
  /// run comes, at once: one attempt, the decoding error as its last error, never retried, and
  /// the handler never called.
  @Test func aValueThatDoesNotDecodeIsKeptAtOnce() async throws {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<Int>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("sql-decode"),
        maxAttempts: 5)
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = .milliseconds(10)
      try await queue.migrate()
      try await Self.sql(client, "SELECT dpd_delay(\(queue.name), 'k', '0', '\"seven\"')")
      try await Self.sql(client, "SELECT dpd_delay(\(queue.name), 'good', '0', '7')")
      let handled = Locked<[String: Int]>([:])
      try await queue.withWorker(handler: { key, value in handled.withLock { $0[key] = value } }) {
        () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(handled.withLock { $0 } == ["good": 7])
      let failures = try await queue.rawFailures()
      #expect(failures.map(\.key) == ["k"])
      #expect(failures.first?.attempts == 1)
      #expect(failures.first?.json == #""seven""#)
      #expect(failures.first?.lastError.contains("does not decode") == true, "\(failures)")
    }
  }

  /// Runs `query` and reads its rows, so that an error the server raises while it runs them
  /// (as a function's `RAISE` is) is thrown here.
  static func sql(_ client: PostgresClient, _ query: PostgresQuery) async throws {
    for try await _ in try await client.query(query) {}
  }

  static func bool(_ client: PostgresClient, _ query: PostgresQuery) async throws -> Bool {
    for try await value in try await client.query(query).decode(Bool.self) { return value }
    return false
  }

  static func row(_ client: PostgresClient, _ query: PostgresQuery) async throws -> [String] {
    for try await row in try await client.query(query) {
      return try row.makeRandomAccess().map { try $0.decode(String.self) }
    }
    return []
  }
}
