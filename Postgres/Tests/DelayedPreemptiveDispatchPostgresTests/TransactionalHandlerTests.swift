import DelayedPreemptiveDispatch
import Foundation
import Logging
import MetricsTestKit
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P16 against the real server: with `transactionalHandler`, a run's writes through its
/// connection and the end of its burst commit together, and only while the run's claim holds
/// the key. (`PostgresFaultTests.pausedTransactionalRunsWritesNeverLand` pauses a real worker
/// process past its lease.)
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresTransactionalHandlerTests {
  struct Refused: Error {}
  static let logger = Logger(label: "test")

  /// `dpd_end_stale_run(claim)`, which a takeover's claim calls, ends exactly the backend whose
  /// open transaction a run of that claim marked: not one marked by another claim, nor one whose
  /// marked transaction has ended (a pooled connection lent again), nor an idle one.
  @Test func endingAStaleRunEndsOnlyThatRunsOpenTransaction() async throws {
    try await TestDatabase.withQueue("tx-end-stale") { _, client in
      let (stale, other) = (UUID(), UUID())
      try await client.withConnection { staleRun in
        try await client.withConnection { otherRun in
          try await client.withConnection { ended in
            let stalePID = try await Self.backendPID(of: staleRun)
            let otherPID = try await Self.backendPID(of: otherRun)
            let endedPID = try await Self.backendPID(of: ended)
            try await staleRun.query(TransactionStatements.begin, logger: Self.logger)
            try await staleRun.query(TransactionStatements.markRun(stale), logger: Self.logger)
            try await otherRun.query(TransactionStatements.begin, logger: Self.logger)
            try await otherRun.query(TransactionStatements.markRun(other), logger: Self.logger)
            // The same claim's mark, on a transaction that has ended since.
            try await ended.query(TransactionStatements.begin, logger: Self.logger)
            try await ended.query(TransactionStatements.markRun(stale), logger: Self.logger)
            try await ended.query(TransactionStatements.commit, logger: Self.logger)

            #expect(try await Self.endStaleRun(stale, client: client) == true)
            // The stale run's backend is gone; the other run's and the reused one are not.
            // (Asked of the server from another connection: postgres-nio 1.33.2 may never answer
            // a query sent on a connection the server has just closed.)
            #expect(
              try await TestDatabase.eventually(within: .seconds(30)) {
                try await Self.backendsAlive([stalePID], client: client) == 0
              }, "the stale run's backend was not ended")
            #expect(try await Self.backendsAlive([otherPID, endedPID], client: client) == 2)
            try await otherRun.query(TransactionStatements.rollback, logger: Self.logger)
            // Nothing carries the stale claim any more.
            #expect(try await Self.endStaleRun(stale, client: client) == false)
          }
        }
      }
    }
  }

  /// The backend process of `connection`.
  static func backendPID(of connection: PostgresConnection) async throws -> Int {
    let rows = try await connection.query("SELECT pg_backend_pid()", logger: logger)
    for try await pid in rows.decode(Int.self) { return pid }
    return -1
  }

  /// How many of `pids` are backends that still run.
  static func backendsAlive(_ pids: [Int], client: PostgresClient) async throws -> Int {
    let rows = try await client.query(
      "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(\(pids.map(Int32.init))::int4[])")
    for try await count in rows.decode(Int.self) { return count }
    return -1
  }

  /// Calls `dpd_end_stale_run(claim)` on a connection of its own.
  static func endStaleRun(_ claim: UUID, client: PostgresClient) async throws -> Bool? {
    let rows = try await client.query("SELECT dpd_end_stale_run(\(claim))")
    for try await ended in rows.decode(Bool.self) { return ended }
    return nil
  }

  @Test func aRunsWritesAndItsEndCommitTogether() async throws {
    try await Self.withWrites("tx-run") { queue, writes in
      for key in ["a", "b", "c"] {
        try await queue.delay(key, for: .zero, value: "\(key)1")
      }
      try await Self.withWorker(queue) { run, connection in
        try await writes.insert(run, on: connection)
      } body: { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(try await writes.all() == ["a=a1", "b=b1", "c=c1"])
    }
  }

  /// A handler that throws is rolled back, its write with it, and retried as P5 says; a run
  /// that hands work on with `delay(on:)` hands it on exactly once.
  @Test func aThrowingHandlersWritesRollBackAndItIsRetried() async throws {
    try await Self.withWrites("tx-throw") { queue, writes in
      try await queue.delay("k", for: .zero, value: "v")
      try await Self.withWorker(queue) { run, connection in
        try await writes.insert(run, on: connection)
        if run.key == "k" {
          try await queue.delay(
            "next", for: .zero, value: "from attempt \(run.attempt)", on: connection)
        }
        if run.attempt == 1 { throw Refused() }
      } body: { () async throws in
        #expect(try await TestDatabase.eventually { try await writes.all().count == 2 })
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(try await writes.all() == ["k=v", "next=from attempt 2"])
    }
  }

  /// A run whose claim was taken over while its handler ran (here the takeover is written by
  /// hand, as another worker's claim would write it) is rolled back when its handler returns:
  /// its write never lands, and the run counts as a lost lease.
  @Test func aStaleRunIsRolledBack() async throws {
    let metrics = TestMetrics()
    try await Self.withWrites("tx-stale", metrics: metrics) { queue, writes in
      try await queue.delay("k", for: .zero, value: "v")
      let takenOver = Latch()
      try await Self.withWorker(queue) { run, connection in
        try await writes.insert(run, on: connection)
        if run.attempt == 1 {
          try await writes.client.query(
            """
            UPDATE dpd_bursts SET claim = gen_random_uuid(), fence = nextval('dpd_fence'),
              due_at = clock_timestamp() + interval '1 hour'
            WHERE name = \(queue.name) AND key = 'k'
            """)
          takenOver.open()
        }
      } body: { () async throws in
        #expect(try await TestDatabase.eventually { takenOver.isOpen })
        #expect(
          try await TestDatabase.eventually {
            (try? metrics.expectCounter("dpd.postgres.runs", Self.outcome(queue, "lease_lost")))?
              .totalValue == 1
          })
      }
      #expect(try await writes.all().isEmpty)
      #expect(try await queue.runningBursts().map(\.key) == ["k"])
    }
  }

  static func outcome(_ queue: PostgresDelayedPreemptiveQueue<String>, _ outcome: String)
    -> [(String, String)]
  {
    [("queue", queue.name), ("outcome", outcome)]
  }

  /// A table of the runs' writes, and a migrated queue that tests use with it.
  struct Writes: Sendable {
    let client: PostgresClient
    let table: String

    func insert(_ run: PostgresBurstRun<String>, on connection: PostgresConnection) async throws {
      try await connection.query(
        PostgresQuery(
          unsafeSQL: "INSERT INTO \(table) (entry) VALUES ($1)", binds: bindings(run)),
        logger: PostgresTransactionalHandlerTests.logger)
    }

    private func bindings(_ run: PostgresBurstRun<String>) -> PostgresBindings {
      var bindings = PostgresBindings()
      bindings.append("\(run.key)=\(run.value)")
      return bindings
    }

    func all() async throws -> [String] {
      var entries: [String] = []
      let rows = try await client.query(
        PostgresQuery(unsafeSQL: "SELECT entry FROM \(table) ORDER BY entry"))
      for try await entry in rows.decode(String.self) { entries.append(entry) }
      return entries
    }
  }

  static func withWrites(
    _ prefix: String, metrics: TestMetrics = TestMetrics(),
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>, Writes) async throws -> Void
  ) async throws {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName(prefix),
        lease: .seconds(30), metricsFactory: metrics)
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = .milliseconds(20)
      try await queue.migrate()
      let table = "dpd_test_tx_\(UUID().uuidString.prefix(8).lowercased())"
      try await client.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (entry text)"))
      do {
        try await body(queue, Writes(client: client, table: table))
      } catch {
        _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
        throw error
      }
      try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
    }
  }

  /// Runs a transactional worker while `body` runs, then cancels it and waits for it.
  static func withWorker(
    _ queue: PostgresDelayedPreemptiveQueue<String>,
    handler:
      @escaping @Sendable (PostgresBurstRun<String>, PostgresConnection) async throws ->
      Void,
    body: () async throws -> Void
  ) async throws {
    try await TestDatabase.whileWorking(
      { try await queue.run(transactionalHandler: handler) }, body)
  }
}
