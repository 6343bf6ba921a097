import DelayedPreemptiveDispatch
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P14 against the real server: `delay`, `cancel` and `flush` made `on:` a connection are
/// part of its open transaction. Rolled back, they leave no trace (no burst, no run); committed,
/// they behave as the calls without `on:`, and workers learn of a submission at commit.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresTransactionalSubmissionTests {
  struct Rollback: Error {}
  static let logger = Logger(label: "test")

  /// A worker that sleeps with a long safety poll, so that only the NOTIFY that PostgreSQL
  /// delivers at commit can wake it in time.
  @Test func aRolledBackSubmissionNeverRunsAndACommittedOneRunsOnceAtCommit() async throws {
    try await TestDatabase.withQueue("tx-delay") { sleepy, client in
      var sleepy = sleepy
      sleepy.safetyPoll = .seconds(60)
      let queue = sleepy
      let runs = RunLog()
      try await queue.withWorker(handler: { key, value in try await runs.record(key, value) }) {
        // Let the worker reach its sleep: it then waits for a NOTIFY or a minute.
        #expect(try await TestDatabase.eventually { try await queue.pendingCount() == 0 })
        await #expect(throws: PostgresTransactionError.self) {
          try await client.withTransaction(logger: Self.logger) {
            (connection) async throws -> Void in
            try await queue.delay("doc", for: .zero, value: "rolled back", on: connection)
            throw Rollback()
          }
        }
        #expect(try await queue.pendingCount() == 0)

        let committing = Latch()
        let proceed = Latch()
        let transaction = Task {
          try await client.withTransaction(logger: Self.logger) {
            (connection) async throws -> Void in
            try await queue.delay("doc", for: .zero, value: "committed", on: connection)
            committing.open()
            // Open until the test has looked from outside.
            try await proceed.wait()
          }
        }
        #expect(try await TestDatabase.eventually { committing.isOpen })
        // Not visible to anyone before the commit.
        #expect(try await queue.pendingCount() == 0)
        #expect(try await !queue.isPending("doc"))
        let committed = ContinuousClock.now
        proceed.open()
        try await transaction.value
        #expect(
          try await TestDatabase.eventually(within: .seconds(20)) { await runs.count("doc") == 1 })
        let woke = ContinuousClock.now - committed
        #expect(woke < .seconds(20), "the worker woke \(woke) after the commit")
        print("transactional delay: the worker ran the burst \(woke) after the commit")
      }
      #expect(await runs.values("doc") == ["committed"])
    }
  }

  /// A committed `delay(on:)` follows the queue's rules exactly as `delay` does: it joins the
  /// key's burst, whose value is the newest.
  @Test func committedSubmissionsJoinBurstsAsWithoutAConnection() async throws {
    try await TestDatabase.withQueue("tx-join") { queue, client in
      try await queue.delay("k", for: .seconds(60), value: "a")
      try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
        try await queue.delay("k", for: .seconds(60), value: "b", on: connection)
        try await queue.delay("k", for: .seconds(60), value: "c", on: connection)
      }
      try await queue.delay("other", for: .seconds(60), value: "x")
      // Outside a transaction, a call commits at once.
      try await client.withConnection { connection in
        try await queue.delay("solo", for: .seconds(60), value: "s", on: connection)
      }
      #expect(try await queue.pendingCount() == 3)
      #expect(try await queue.flush("k"))
      #expect(try await queue.flush("solo"))
      let runs = RunLog()
      try await queue.withWorker(handler: { key, value in try await runs.record(key, value) }) {
        () async throws in
        #expect(try await TestDatabase.eventually { await runs.all.count == 2 })
      }
      #expect(await runs.values("k") == ["c"])
      #expect(await runs.values("solo") == ["s"])
      #expect(try await queue.cancel("other"))
    }
  }

  @Test func cancelAndFlushOnAConnectionHoldOnlyIfTheTransactionCommits() async throws {
    try await TestDatabase.withQueue("tx-ops") { queue, client in
      try await queue.delay("k", for: .seconds(60), value: "v")
      await #expect(throws: PostgresTransactionError.self) {
        try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
          #expect(try await queue.cancel("k", on: connection))
          throw Rollback()
        }
      }
      #expect(try await queue.isPending("k"))
      await #expect(throws: PostgresTransactionError.self) {
        try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
          #expect(try await queue.flush("k", on: connection))
          throw Rollback()
        }
      }
      // Still an hour's minute away: the flush was rolled back.
      #expect(try await Self.dueInSeconds(client, queue, "k") > 30)
      try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
        #expect(try await queue.flush("k", on: connection))
      }
      #expect(try await Self.dueInSeconds(client, queue, "k") <= 0)
      // A flushed burst is no longer pending (rule 4: flush ends the burst): a cancel leaves it.
      try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
        #expect(try await !queue.cancel("k", on: connection))
      }
      #expect(try await queue.isPending("k"))
      try await queue.delay("c", for: .seconds(60), value: "v")
      try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
        #expect(try await queue.cancel("c", on: connection))
        #expect(try await !queue.cancel("c", on: connection))
      }
      #expect(try await !queue.isPending("c"))
    }
  }

  /// Bad input is refused before anything is sent, so the caller's transaction goes on; a
  /// statement the database refuses is a typed error, never the driver's.
  @Test func badInputLeavesTheCallersTransactionUsable() async throws {
    try await TestDatabase.withQueue("tx-bad") { queue, client in
      try await client.withTransaction(logger: Self.logger) { (connection) async throws -> Void in
        await #expect(throws: PostgresDelayedPreemptiveQueueError.emptyKey) {
          try await queue.delay("", for: .zero, value: "v", on: connection)
        }
        await #expect(throws: PostgresDelayedPreemptiveQueueError.self) {
          try await queue.delay("k", for: .zero, value: "nul \0 in text", on: connection)
        }
        try await queue.delay("k", for: .seconds(60), value: "good", on: connection)
      }
      #expect(try await queue.isPending("k"))
      // An aborted transaction refuses the statement: the queue's typed error says so.
      let refused = try await client.withConnection { connection in
        try await connection.query("BEGIN", logger: Self.logger)
        _ = try? await connection.query("SELECT 1/0", logger: Self.logger)
        var caught: (any Error)?
        do {
          try await queue.delay("k2", for: .zero, value: "v", on: connection)
        } catch {
          caught = error
        }
        try await connection.query("ROLLBACK", logger: Self.logger)
        return caught as? PostgresDelayedPreemptiveQueueError
      }
      guard case .databaseError(let operation, let sqlState, _)? = refused else {
        Issue.record("expected databaseError, got \(String(describing: refused))")
        return
      }
      #expect(operation == "delay")
      #expect(sqlState == "25P02")
    }
  }

  static func dueInSeconds(
    _ client: PostgresClient, _ queue: PostgresDelayedPreemptiveQueue<String>, _ key: String
  ) async throws -> Double {
    let rows = try await client.query(
      """
      SELECT extract(epoch FROM due_at - clock_timestamp())::float8 FROM dpd_bursts
      WHERE name = \(queue.name) AND key = \(key)
      """)
    for try await seconds in rows.decode(Double.self) { return seconds }
    return .infinity
  }
}
