import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Upgrading a database of schema version 2 in place (through versions 3 to 7), with
/// bursts in every state, from several replicas at once. Runs in a database of its own.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresMigrationTests {
  /// The tables as version 2 of this package made them (the v1 and v2 steps of its migration).
  static let versionTwo = """
    CREATE TABLE dpd_schema (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
    CREATE TABLE dpd_bursts (
      name text NOT NULL, key text NOT NULL, value jsonb NOT NULL,
      deadline timestamptz NOT NULL, due_at timestamptz NOT NULL,
      first_submitted timestamptz NOT NULL, generation bigint NOT NULL DEFAULT 1,
      claimed_generation bigint, claim uuid, owner text, attempts integer NOT NULL DEFAULT 0,
      failed boolean NOT NULL DEFAULT false, last_error text, PRIMARY KEY (name, key));
    CREATE INDEX dpd_bursts_due ON dpd_bursts (name, due_at) WHERE NOT failed;
    CREATE INDEX dpd_bursts_failed ON dpd_bursts (name, key) WHERE failed;
    CREATE SEQUENCE dpd_fence;
    ALTER TABLE dpd_bursts ADD COLUMN fence bigint;
    CREATE INDEX dpd_bursts_claim ON dpd_bursts (claim) WHERE claim IS NOT NULL;
    INSERT INTO dpd_schema (version) VALUES (2);
    """

  @Test func versionTwoMigratesInPlaceAndItsBurstsRunAsBefore() async throws {
    let database = "dpd_v2_\(UUID().uuidString.prefix(8).lowercased())"
    try await TestDatabase.withClient { client, _ in
      try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"))
    }
    var configuration = try TestDatabase.configuration()
    configuration.database = database
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    defer { running.cancel() }
    try await client.withConnection { connection in
      for statement in Self.versionTwo.split(separator: ";")
      where !statement.allSatisfy(\.isWhitespace) {
        try await connection.query(PostgresQuery(unsafeSQL: String(statement)), logger: Self.logger)
      }
    }
    // In version 2's form: a waiting burst (due in an hour, so that a submission after the migration
    // joins it however slow the machine is: a burst that is due takes none, T7; a 5 s margin was
    // once used up by a loaded CI run; the test flushes it after the submission); a running one with a burst submitted during its run
    // (generation past the claim's; the row holds the newer value); a running one alone; a kept
    // failure.
    let running1 = UUID()
    let running2 = UUID()
    try await client.query(
      """
      INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted, generation,
        claimed_generation, claim, owner, attempts, failed, last_error, fence)
      VALUES
        ('q', 'waiting', '["w1","w2"]', now() + interval '1 hour',
          now() + interval '1 hour', now(), 2, NULL, NULL, NULL, 0, false, NULL, NULL),
        ('q', 'behind', '["b3"]', now(), now() + interval '1 hour', now(), 3, 2, \(running1),
          'old', 1, false, NULL, 7),
        ('q', 'alone', '["a1"]', now(), now() + interval '1 hour', now(), 1, 1, \(running2),
          'old', 1, false, NULL, 8),
        ('q', 'failed', '["f1"]', now(), now(), now(), 1, NULL, NULL, NULL, 5, true, 'boom', 9)
      """)

    let queue = PostgresDelayedPreemptiveQueue<[String]>(
      client: client, configuration: configuration, name: "q", merge: .append)
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<4 { group.addTask { try await queue.migrate() } }
      try await group.waitForAll()
    }
    try await queue.migrate()
    #expect(try await Self.text(client, "SELECT version::text FROM dpd_schema") == "8")
    // Version 6: the functions of submission and the queue's stored options.
    #expect(
      try await Self.text(
        client,
        """
        SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc
        WHERE proname IN ('dpd_submit', 'dpd_delay', 'dpd_cancel', 'dpd_flush')
        """) == "dpd_cancel,dpd_delay,dpd_flush,dpd_submit")
    #expect(
      try await Self.text(client, "SELECT merge FROM dpd_queues WHERE name = 'q'") == "append")
    // Version 4: the index of due rows leaves out the rows kept only for `minimumSpacing`.
    let dueIndex = try await Self.text(client, "SELECT pg_get_indexdef('dpd_bursts_due'::regclass)")
    #expect(dueIndex?.contains("(NOT idle)") == true, "\(dueIndex ?? "no index")")
    #expect(try await Self.later(client, "behind") == #"[["b3"]]"#)
    // Version 5: a trace record for each burst but the newest; nothing was traced before.
    #expect(try await Self.traces(client, "behind") == "[{}]")
    #expect(try await Self.traces(client, "alone") == "[]")
    // Version 6: the kept failure moved to `dpd_failures`, with its value, attempts, last error
    // and a trace record with its count; its row is gone.
    #expect(try await Self.traces(client, "failed") == nil)
    #expect(
      try await Self.text(
        client,
        """
        SELECT concat_ws(' ', key, value::text, attempts, last_error, traces::text)
        FROM dpd_failures WHERE name = 'q'
        """) == #"failed ["f1"] 5 boom {"count": 1}"#)
    #expect(
      try await Self.text(client, "SELECT count(*)::text FROM dpd_bursts WHERE failed") == "0")
    let raw = try await queue.rawFailures()
    #expect(raw.map(\.key) == ["failed"] && raw.allSatisfy { $0.id > 0 })
    #expect(try await Self.later(client, "alone") == "[]")
    #expect(try await Self.later(client, "waiting") == "[]")
    #expect(try await queue.pendingCount() == 3)
    #expect(try await queue.failures().map(\.value) == [["f1"]])
    // Version 7: time is read through `dpd_now()`, the defaults included, and a session's
    // `dpd.now` sets it; an empty setting is the real clock again.
    #expect(
      try await Self.text(
        client,
        """
        SELECT string_agg(pg_get_expr(adbin, adrelid), ',' ORDER BY adrelid::regclass::text)
        FROM pg_attrdef JOIN pg_attribute ON attrelid = adrelid AND attnum = adnum
        WHERE attname IN ('failed_at', 'migrated_at')
        """) == "dpd_now(),dpd_now()")
    try await client.withConnection { connection in
      try await connection.query("SET dpd.now = '2001-02-03 04:05:06+00'", logger: Self.logger)
      let rows = try await connection.query(
        "SELECT (dpd_now() = '2001-02-03 04:05:06+00')::text", logger: Self.logger)
      #expect(try await rows.collect().first?.decode(String.self) == "true")
      try await connection.query("RESET dpd.now", logger: Self.logger)
      let real = try await connection.query(
        "SELECT (abs(extract(epoch FROM dpd_now() - now())) < 3600)::text", logger: Self.logger)
      #expect(try await real.collect().first?.decode(String.self) == "true")
    }

    // Version 8: the rows found keep version 7's `cancel`, which drops every burst that waits:
    // each one counts as pending (`retried_first`), and no newest burst is sealed.
    #expect(
      try await Self.text(
        client,
        """
        SELECT string_agg(concat_ws(' ', key, retried_first, sealed::text), ',' ORDER BY key)
        FROM dpd_bursts WHERE name = 'q'
        """) == "alone 0 false,behind 1 false,waiting 1 false")

    // The old replica's runs end under the new schema: the burst behind one runs after it.
    func burst(_ key: String, _ claim: UUID) -> ClaimedBurst {
      ClaimedBurst(
        key: key, json: "[]", claim: claim, attempt: 1, fence: 0, exhausted: false,
        gaveWay: false, takenOver: false, latenessMilliseconds: 0)
    }
    let ended = try await queue.succeeded([burst("behind", running1), burst("alone", running2)])
    #expect(Set(ended) == [running1, running2])
    try await queue.delay("waiting", for: .zero, value: ["w3"])
    #expect(try await queue.flush("waiting"))
    let runs = Runs<[String]>()
    let handler: @Sendable (String, [String]) async throws -> Void = { key, values in
      await runs.add(key, values)
    }
    try await queue.withWorker(handler: handler) {
      let drained = try await queue.drains(within: .seconds(30))
      #expect(drained)
    }
    #expect(await runs.values("waiting") == [["w1", "w2", "w3"]])
    #expect(await runs.values("behind") == [["b3"]])
    #expect(await runs.values("alone") == [])
    // The migrated failure is retried by its id, and runs with its kept value.
    #expect(try await queue.retryFailure(id: try #require(raw.first).id))
    try await queue.withWorker(handler: handler) { () async throws in
      #expect(try await TestDatabase.eventually { await runs.values("failed") == [["f1"]] })
    }
    #expect(try await queue.rawFailures().isEmpty)

    running.cancel()
    try await TestDatabase.withClient { client, _ in
      try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(database) WITH (FORCE)"))
    }
  }

  static let logger = PostgresDelayedPreemptiveQueue<String>.silentLogger

  static func text(_ client: PostgresClient, _ query: PostgresQuery) async throws -> String? {
    for try await value in try await client.query(query).decode(String.self) { return value }
    return nil
  }

  static func later(_ client: PostgresClient, _ key: String) async throws -> String? {
    try await text(client, "SELECT later::text FROM dpd_bursts WHERE name = 'q' AND key = \(key)")
  }

  static func traces(_ client: PostgresClient, _ key: String) async throws -> String? {
    try await text(client, "SELECT traces::text FROM dpd_bursts WHERE name = 'q' AND key = \(key)")
  }
}
