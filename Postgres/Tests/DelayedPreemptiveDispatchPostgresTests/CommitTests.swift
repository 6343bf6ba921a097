import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A call that returns has committed. In the extended protocol, which postgres-nio speaks, the
/// server answers a statement (its rows, `CommandComplete`) before it commits the statement's
/// implicit transaction, at the `Sync` that follows; postgres-nio 1.33.2 ends the query at
/// `CommandComplete`, so a commit that fails after it (a restart's `SIGTERM` in between, as
/// `restartsInARowEndNoWorkerAndLoseNoAcknowledgedSubmission` met once in nine runs under
/// load, or a deferred constraint) would still be a call that returned. The queue's own `delay`,
/// `cancel` and `flush` call procedures that commit inside the statement, before it answers.
///
/// Here the commit is refused on purpose, every time, by deferred constraint triggers on the
/// test queue's rows (a refusal at commit, as a restart's is): the call must throw, and
/// nothing it would have written may be in the database. Each test has a database of its own:
/// creating a trigger locks `dpd_bursts` against writes, and behind a transaction that another
/// test holds open (a paused transactional run) that lock would hold up every test's
/// statements on a shared table (a fresh-clone CI run stalled 10 s so).
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresCommitTests {
  /// How `delay` reaches the database.
  enum Path: String, CaseIterable, Sendable {
    /// The first statement of a queue, through the pool.
    case pool
    /// The queue's held connection (``HeldConnection``), through its prepared statement.
    case held
    /// A batch of several callers (``SubmissionBatcher``), one of them refused.
    case batch
  }

  @Test(arguments: Path.allCases)
  func delayWhoseCommitIsRefusedIsNeverAcknowledged(_ path: Path) async throws {
    try await Self.withQueue("commit-\(path.rawValue)") { queue, client in
      try await Self.refusingCommits(of: queue.name, client) {
        switch path {
        case .pool:
          break
        case .held:
          _ = try await PostgresHeldConnectionTests.untilHeld(queue)
        case .batch:
          break
        }
        let sentBefore = queue.heldConnection.statementsSent
        if path == .batch {
          // Several callers at once, so that the refused one shares a batch: the others are
          // stored (the batch is split by its data, SQLSTATE class 23), the refused one throws.
          let outcomes = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
            for key in ["ok-1", "ok-2", "refused", "ok-3", "ok-4"] {
              group.addTask {
                do {
                  try await queue.delay(key, for: .seconds(3600), value: key)
                  return (key, true)
                } catch let error as PostgresDelayedPreemptiveQueueError {
                  guard case .databaseError(_, "23514", _) = error else { throw error }
                  return (key, false)
                }
              }
            }
            var outcomes: [String: Bool] = [:]
            for try await (key, stored) in group { outcomes[key] = stored }
            return outcomes
          }
          #expect(outcomes["refused"] == false, "\(outcomes)")
          for key in ["ok-1", "ok-2", "ok-3", "ok-4"] {
            #expect(outcomes[key] == true, "\(key): \(outcomes)")
            #expect(try await queue.isPending(key))
          }
        } else {
          await #expect(throws: PostgresDelayedPreemptiveQueueError.self) {
            try await queue.delay("refused", for: .seconds(3600), value: "r")
          }
        }
        #expect(!(try await queue.isPending("refused")), "a refused commit stored the burst")
        if path == .held {
          #expect(queue.heldConnection.statementsSent == sentBefore + 1)
        }
        // The connection that met the refusal serves the next call.
        try await queue.delay("after", for: .seconds(3600), value: "a")
        #expect(try await queue.isPending("after"))
      }
    }
  }

  @Test func cancelWhoseCommitIsRefusedIsNeverAcknowledged() async throws {
    try await Self.withQueue("commit-cancel") { queue, client in
      try await Self.refusingCommits(of: queue.name, client) {
        try await queue.delay("kept", for: .seconds(3600), value: "k")
        await #expect(throws: PostgresDelayedPreemptiveQueueError.self) {
          _ = try await queue.cancel("kept")
        }
        #expect(try await queue.isPending("kept"), "a refused cancel dropped the burst")
      }
    }
  }

  @Test func flushWhoseCommitIsRefusedIsNeverAcknowledged() async throws {
    try await Self.withQueue("commit-flush") { queue, client in
      try await Self.refusingCommits(of: queue.name, client) {
        try await queue.delay("flushed", for: .seconds(3600), value: "f")
        await #expect(throws: PostgresDelayedPreemptiveQueueError.self) {
          _ = try await queue.flush("flushed")
        }
        // Still an hour away: the refused flush did not make it due.
        let due = try await Self.secondsUntilDue(queue.name, key: "flushed", client)
        #expect(due > 3000, "due in \(due) s after a refused flush")
      }
    }
  }

  /// A transactional `delay` commits with the caller's transaction, as before: the committing
  /// procedures are for the queue's own calls only (a procedure that commits cannot run inside
  /// a transaction block).
  @Test func delayInTheCallersTransactionCommitsWithIt() async throws {
    try await Self.withQueue("commit-transaction") { queue, client in
      try await client.withTransaction(logger: queue.logger) { connection in
        try await queue.delay("in-transaction", for: .seconds(3600), value: "t", on: connection)
      }
      #expect(try await queue.isPending("in-transaction"))
    }
  }

  /// ``TestDatabase/withQueue(_:options:lease:maxAttempts:retryBackoff:url:_:)`` in a database
  /// of its own.
  static func withQueue(
    _ prefix: String,
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>, PostgresClient) async throws -> Void
  ) async throws {
    try await TestDatabase.withFreshDatabase { url in
      try await TestDatabase.withQueue(prefix, url: url, body)
    }
  }

  /// Runs `body` while deferred constraint triggers refuse, at commit, the rows of queue `name`
  /// that the tests above write: an inserted `refused`, a deleted `kept`, an updated
  /// `flushed` (SQLSTATE 23514). Other queues' rows are not touched (the `WHEN` conditions).
  static func refusingCommits(
    of name: String, _ client: PostgresClient, _ body: () async throws -> Void
  ) async throws {
    let tag = name.replacingOccurrences(of: "-", with: "_").lowercased()
    let function = "dpd_test_refuse_commit_\(tag)"
    try await client.query(
      PostgresQuery(
        unsafeSQL: """
          CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            RAISE EXCEPTION USING ERRCODE = '23514', MESSAGE = 'commit refused by the test';
          END $$
          """))
    let triggers = [
      ("i", "INSERT", "NEW.name = '\(name)' AND NEW.key = 'refused'"),
      ("d", "DELETE", "OLD.name = '\(name)' AND OLD.key = 'kept'"),
      ("u", "UPDATE", "NEW.name = '\(name)' AND NEW.key = 'flushed'"),
    ]
    for (suffix, event, condition) in triggers {
      try await client.query(
        PostgresQuery(
          unsafeSQL: """
            CREATE CONSTRAINT TRIGGER \(function)_\(suffix) AFTER \(event) ON dpd_bursts
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (\(condition))
            EXECUTE FUNCTION \(function)()
            """))
    }
    let outcome = await Result { try await body() }
    for (suffix, _, _) in triggers {
      try await client.query(
        PostgresQuery(unsafeSQL: "DROP TRIGGER \(function)_\(suffix) ON dpd_bursts"))
    }
    try await client.query(PostgresQuery(unsafeSQL: "DROP FUNCTION \(function)()"))
    try outcome.get()
  }

  /// Seconds from now until the key's burst is due.
  static func secondsUntilDue(_ name: String, key: String, _ client: PostgresClient)
    async throws -> Double
  {
    let rows = try await client.query(
      """
      SELECT extract(epoch FROM due_at - clock_timestamp())::float8 FROM dpd_bursts
      WHERE name = \(name) AND key = \(key)
      """)
    for try await seconds in rows.decode(Double.self) { return seconds }
    return -.infinity
  }
}
