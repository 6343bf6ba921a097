import DelayedPreemptiveDispatch
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `runTimeout` against the real server: a handler that never returns (as one whose query
/// postgres-nio 1.33.2 never answers, after the server closed its connection: issue 38's
/// stranded bursts) is given up, and its burst runs again; the worker neither holds its slot nor
/// waits for it to shut down.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresRunTimeoutTests {
  /// Handlers that wait for ever, ignoring cancellation, until the test lets them go.
  final class Stuck: Sendable {
    private let waiting = Locked<[CheckedContinuation<Void, Never>]>([])

    func forever() async {
      await withCheckedContinuation { continuation in
        waiting.withLock { $0.append(continuation) }
      }
    }

    var count: Int { waiting.withLock { $0.count } }

    func release() {
      for continuation in waiting.withLock({ list in
        defer { list = [] }
        return list
      }) {
        continuation.resume()
      }
    }
  }

  static func withQueue(
    _ prefix: String, runTimeout: Duration?, maxAttempts: Int = 5, logs: LogCollector,
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>, PostgresClient) async throws -> Void
  ) async throws {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName(prefix),
        lease: .seconds(3), maxAttempts: maxAttempts, logger: logs.logger())
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = .milliseconds(20)
      queue.runTimeout = runTimeout
      try await queue.migrate()
      try await body(queue, client)
    }
  }

  /// The first run never returns, whatever cancels it: it is given up after `runTimeout` and
  /// abandoned five seconds later (the least grace; a third of the lease is less), the burst runs again at once, and the worker returns when
  /// cancelled although that first handler still waits.
  @Test func aHandlerThatNeverReturnsIsAbandonedAndItsBurstRunsAgain() async throws {
    let logs = LogCollector()
    let stuck = Stuck()
    defer { stuck.release() }
    try await Self.withQueue("timeout-stuck", runTimeout: .seconds(1), logs: logs) { queue, _ in
      let runs = Locked<[Int]>([])
      try await queue.delay("k", for: .zero, value: "v")
      let started = ContinuousClock.now
      try await TestDatabase.whileWorking({
        try await queue.run(concurrency: 1) { run in
          runs.withLock { $0.append(run.attempt) }
          if run.attempt == 1 { await stuck.forever() }
        }
      }) { () async throws in
        #expect(try await queue.drains(within: .seconds(20)))
      }
      let took = ContinuousClock.now - started
      #expect(runs.withLock { $0 } == [1, 2])
      #expect(stuck.count == 1)
      // runTimeout (1 s), then the grace (5 s), then the retry.
      #expect(took >= .seconds(6) && took < .seconds(20), "drained after \(took)")
      #expect(try await queue.failures().isEmpty)
      #expect(logs.contains("was abandoned", atLeast: .warning))
    }
  }

  /// A handler that ends on its cancellation after `runTimeout` fails for that reason: it is
  /// retried, and kept after `maxAttempts` runs with `last_error` saying why. The store counts
  /// the runs; the handlers that started are only checked to be in attempt order, as on a loaded
  /// machine a run can be given up before its handler starts (a CI run started only attempt 2:
  /// attempt 1's 300 ms passed first).
  @Test func aRunPastRunTimeoutIsCancelledRetriedAndKept() async throws {
    let logs = LogCollector()
    try await Self.withQueue(
      "timeout-kept", runTimeout: .milliseconds(300), maxAttempts: 2, logs: logs
    ) { queue, _ in
      let runs = Locked<[Int]>([])
      try await queue.delay("k", for: .zero, value: "v")
      try await TestDatabase.whileWorking({
        try await queue.run(concurrency: 1) { run in
          runs.withLock { $0.append(run.attempt) }
          try await Task.sleep(for: .seconds(3600))
        }
      }) { () async throws in
        #expect(try await queue.drains(within: .seconds(20)))
      }
      let started = runs.withLock { $0 }
      #expect(started == started.sorted() && Set(started).count == started.count)
      #expect(started.allSatisfy { (1...2).contains($0) }, "handlers started: \(started)")
      let failures = try await queue.failures()
      #expect(failures.map(\.key) == ["k"])
      #expect(failures.first?.attempts == 2)
      #expect(failures.first?.lastError.contains("did not return within runTimeout") == true)
      #expect(!logs.contains("was abandoned", atLeast: .warning))
    }
  }

  /// A transactional run given up has its connection closed: its transaction rolls back, so its
  /// write never lands, although its handler never returns; the burst's next run commits. The
  /// first handler that starts is the one that never returns. On a loaded machine a run can be
  /// given up before its handler starts (one CI run started only attempt 2: its transaction's
  /// connection and `BEGIN` took the whole 1 s `runTimeout` of attempt 1), and a run after the
  /// stuck one can be given up too (another CI run saw a third run commit): the handlers that
  /// start do so in the order of their attempts, and only the last one's write lands.
  @Test func aTransactionalRunGivenUpRollsBack() async throws {
    let logs = LogCollector()
    let stuck = Stuck()
    defer { stuck.release() }
    try await Self.withQueue("timeout-tx", runTimeout: .seconds(1), logs: logs) {
      queue, client in
      let table = "dpd_test_timeout_\(UUID().uuidString.prefix(8).lowercased())"
      try await client.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (entry text)"))
      defer {
        Task { _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)")) }
      }
      try await queue.delay("k", for: .zero, value: "v")
      let attempts = Locked<[Int]>([])
      try await TestDatabase.whileWorking({
        try await queue.run(transactionalHandler: { run, connection in
          let first = attempts.withLock {
            $0.append(run.attempt)
            return $0.count == 1
          }
          try await connection.query(
            PostgresQuery(
              unsafeSQL: "INSERT INTO \(table) (entry) VALUES ('attempt \(run.attempt)')"),
            logger: logs.logger())
          if first { await stuck.forever() }
        })
      }) { () async throws in
        #expect(try await queue.drains(within: .seconds(20)))
      }
      var entries: [String] = []
      let rows = try await client.query(
        PostgresQuery(unsafeSQL: "SELECT entry FROM \(table) ORDER BY entry"))
      for try await entry in rows.decode(String.self) { entries.append(entry) }
      // Only the last run committed: the one given up for ever, and any other given up, did not.
      let started = attempts.withLock { $0 }
      let last = try #require(started.last)
      #expect(started.count >= 2, "\(started)")
      #expect(zip(started, started.dropFirst()).allSatisfy { $0 < $1 }, "\(started)")
      #expect(entries == ["attempt \(last)"], "runs \(started)")
    }
  }
}
