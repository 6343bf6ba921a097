import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// What an operator does with a queue: `retryFailure`, `discardFailure` and `runningBursts`,
/// against the real server.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresOperationsTests {
  struct Refused: Error, CustomStringConvertible {
    var description: String { "refused on purpose" }
  }

  /// Runs a worker whose handler records each run and throws while `failing` is open.
  static func withRecordingWorker<Result: Sendable>(
    _ queue: PostgresDelayedPreemptiveQueue<String>, failing: Latch, runs: RunList,
    _ body: () async throws -> Result
  ) async throws -> Result {
    try await queue.withWorker(
      handler: { key, value in
        runs.append(key, value)
        if failing.isOpen { throw Refused() }
      }, body)
  }

  @Test func retryFailureRunsTheKeptValueAgainAsAFreshBurst() async throws {
    try await TestDatabase.withQueue(
      "retry", maxAttempts: 1, retryBackoff: .milliseconds(10)
    ) { queue, _ in
      let failing = Latch()
      failing.open()
      let runs = RunList()
      try await queue.delay("k", for: .zero, value: "kept")
      let failure = try await Self.withRecordingWorker(queue, failing: failing, runs: runs) {
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        return try await queue.failures().first
      }
      #expect(failure?.key == "k" && failure?.value == "kept" && failure?.attempts == 1)
      #expect(failure?.lastError == "refused on purpose")
      #expect(runs.values("k") == ["kept"])

      let succeeding = Latch()  // closed: the handler no longer throws
      try await Self.withRecordingWorker(queue, failing: succeeding, runs: runs) {
        () async throws in
        #expect(try await queue.retryFailure("k"))
        #expect(try await queue.failures().isEmpty)
        #expect(try await TestDatabase.eventually { runs.values("k").count == 2 })
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(runs.values("k") == ["kept", "kept"])
      #expect(try await queue.failures().isEmpty)
      #expect(try await queue.retryFailure("k") == false)
    }
  }

  @Test func retryFailureStartsTheAttemptsAgain() async throws {
    try await TestDatabase.withQueue(
      "retry-attempts", maxAttempts: 2, retryBackoff: .milliseconds(10)
    ) { queue, client in
      let failing = Latch()
      failing.open()
      let runs = RunList()
      try await queue.delay("k", for: .zero, value: "v")
      let first = try await Self.withRecordingWorker(queue, failing: failing, runs: runs) {
        () async throws in
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        let first = try #require(try await queue.failures().first)
        #expect(first.attempts == 2)
        #expect(try await queue.retryFailure("k"))
        // Two more runs, both thrown: the retried burst had its own maxAttempts.
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        #expect(runs.values("k").count == 4)
        return first
      }
      // The retried failure left `dpd_failures`; its second failure is kept there under a new
      // id, and the key has no burst left.
      let raw = try await queue.rawFailures()
      #expect(raw.count == 1)
      #expect(raw.first?.attempts == 2 && raw.first?.lastError == "refused on purpose")
      #expect(raw.first?.id != first.id)
      let rows = try await client.query(
        "SELECT count(*) FROM dpd_bursts WHERE name = \(queue.name) AND key = 'k' AND NOT idle")
      for try await count in rows.decode(Int.self) { #expect(count == 0) }
    }
  }

  @Test func discardFailureRemovesTheKeptFailure() async throws {
    try await TestDatabase.withQueue(
      "discard", maxAttempts: 1, retryBackoff: .milliseconds(10)
    ) { queue, _ in
      let failing = Latch()
      failing.open()
      let runs = RunList()
      try await queue.delay("k", for: .zero, value: "v")
      try await Self.withRecordingWorker(queue, failing: failing, runs: runs) {
        () async throws in
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
      }
      #expect(try await queue.discardFailure("k"))
      #expect(try await queue.failures().isEmpty)
      #expect(try await queue.isPending("k") == false)
      #expect(try await queue.pendingCount() == 0)
      #expect(try await queue.discardFailure("k") == false)
      #expect(try await queue.retryFailure("k") == false)
    }
  }

  @Test func unknownOrPendingKeysHaveNoFailureToRetryOrDiscard() async throws {
    try await TestDatabase.withQueue("no-failure") { queue, _ in
      #expect(try await queue.retryFailure("unknown") == false)
      #expect(try await queue.discardFailure("unknown") == false)
      try await queue.delay("waiting", for: .seconds(60), value: "v")
      #expect(try await queue.retryFailure("waiting") == false)
      #expect(try await queue.discardFailure("waiting") == false)
      #expect(try await queue.isPending("waiting"))
      await #expect(throws: PostgresDelayedPreemptiveQueueError.emptyKey) {
        try await queue.retryFailure("")
      }
      await #expect(throws: PostgresDelayedPreemptiveQueueError.emptyKey) {
        try await queue.discardFailure("")
      }
      #expect(try await queue.cancel("waiting"))
    }
  }

  @Test func runningBurstsListsTheOwnerAttemptFenceAndLeaseOfEachRun() async throws {
    try await TestDatabase.withQueue("running", lease: .seconds(30)) { queue, _ in
      let started = Latch()
      let release = Latch()
      defer { release.open() }
      #expect(try await queue.runningBursts().isEmpty)
      try await queue.delay("busy", for: .zero, value: "v")
      try await queue.delay("waiting", for: .seconds(60), value: "v")
      try await queue.withWorker(
        handler: { _, _ in
          started.open()
          try await release.wait()
        }
      ) {
        #expect(try await TestDatabase.eventually { started.isOpen })
        let running = try await queue.runningBursts()
        #expect(running.map(\.key) == ["busy"])
        let burst = try #require(running.first)
        #expect(burst.owner.contains("/\(getpid())/"))
        #expect(burst.attempt == 1)
        #expect(burst.fence > 0)
        #expect(burst.leaseLeft > .seconds(15) && burst.leaseLeft <= .seconds(30))
        release.open()
        #expect(try await TestDatabase.eventually { try await queue.pendingCount() == 1 })
        #expect(try await queue.runningBursts().isEmpty)
      }
      #expect(try await queue.cancel("waiting"))
    }
  }
}

/// The runs a test handler saw, in order.
final class RunList: Sendable {
  private let runs = Locked<[(key: String, value: String)]>([])

  func append(_ key: String, _ value: String) {
    runs.withLock { $0.append((key, value)) }
  }

  func values(_ key: String) -> [String] {
    runs.withLock { $0.filter { $0.key == key }.map(\.value) }
  }

  var count: Int { runs.withLock { $0.count } }

  /// The distinct keys that ran.
  var keys: Set<String> { runs.withLock { Set($0.map(\.key)) } }
}
