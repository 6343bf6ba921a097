import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchModel
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P17, against the real server: nothing kept is ever dropped. A burst that fails
/// `maxAttempts` times is kept with its value also when later bursts of its key wait behind it,
/// or new submissions of its key come; a key may have several kept failures, each with its own
/// id; `retryFailure` and `discardFailure` act on a key's, oldest first, or on one by its id; a
/// submission during a retry's backoff never joins the failed head.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresKeptFailureTests {
  struct Refused: Error, CustomStringConvertible {
    var description: String { "refused on purpose" }
  }

  /// A migrated queue of `[String]` with a fresh name.
  static func withQueue<Result: Sendable>(
    _ prefix: String, merge: PostgresValueMerge = .append, maxAttempts: Int,
    retryBackoff: Duration = .milliseconds(20),
    logger: Logger = PostgresDelayedPreemptiveQueue<[String]>.silentLogger,
    _ body:
      @Sendable (PostgresDelayedPreemptiveQueue<[String]>, PostgresClient) async throws ->
      Result
  ) async throws -> Result {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName(prefix),
        maxAttempts: maxAttempts, merge: merge, logger: logger)
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = retryBackoff
      try await queue.migrate()
      return try await body(queue, client)
    }
  }

  /// The issue's case: with `.append`, a head that fails its `maxAttempts` runs while a later
  /// burst of its key waits is kept with its whole array, and the waiting burst runs as usual.
  @Test func aFailedAppendBurstWithAnotherWaitingKeepsEveryValue() async throws {
    let logs = LogCollector()
    try await Self.withQueue("kept-append", maxAttempts: 2, logger: logs.logger()) { queue, _ in
      let runs = Runs<[String]>()
      let release = Latch()
      try await queue.withWorker(
        handler: { key, values in
          await runs.add(key, values)
          guard values.contains("a1") else { return }
          try await release.wait()
          throw Refused()
        }
      ) {
        // A minute's delay, so that "a2" joins "a1" even when a call is slow on a loaded
        // machine; `flush` then makes the burst due.
        try await queue.delay("k", for: .seconds(60), value: ["a1"])
        try await queue.delay("k", for: .seconds(60), value: ["a2"])
        #expect(try await queue.flush("k"))
        #expect(try await TestDatabase.eventually { await runs.all.count == 1 })
        // Submitted during the head's first run: a burst of its own behind it.
        try await queue.delay("k", for: .zero, value: ["b1"])
        try await queue.delay("k", for: .zero, value: ["b2"])
        release.open()
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        #expect(try await queue.drains(within: .seconds(10)))
      }
      let failures = try await queue.failures()
      #expect(failures.map(\.value) == [["a1", "a2"]])
      #expect(failures.first?.key == "k" && failures.first?.attempts == 2)
      #expect(failures.first?.lastError == "refused on purpose")
      #expect(await runs.values("k") == [["a1", "a2"], ["a1", "a2"], ["b1", "b2"]])
      let raw = try await queue.rawFailures()
      #expect(raw.map(\.json) == [#"["a1", "a2"]"#] && raw.map(\.id) == failures.map(\.id))
      #expect(logs.contains("burst kept as failed after 2 runs", atLeast: .warning))
      #expect(!logs.lines.contains { $0.message.contains("dropped") })
    }
  }

  /// Failures of one key are kept side by side, each with its own id, oldest first, while the
  /// key's later bursts run; `discardFailure(id:)` and `retryFailure(id:)` act on one,
  /// `retryFailure(_:)` and `discardFailure(_:)` on all of the key's, oldest first.
  @Test func repeatedFailuresOfOneKeyKeepSeveralIdsActedOnByKeyAndById() async throws {
    try await Self.withQueue("kept-ids", merge: .replace, maxAttempts: 1) { queue, _ in
      let runs = Runs<[String]>()
      let failing = Locked(true)
      let handler: @Sendable (String, [String]) async throws -> Void = { key, values in
        await runs.add(key, values)
        if failing.withLock({ $0 }), values.first?.hasPrefix("bad") == true { throw Refused() }
      }
      try await queue.withWorker(handler: handler) { () async throws in
        for value in ["bad1", "bad2", "good", "bad3"] {
          try await queue.delay("k", for: .zero, value: [value])
          #expect(try await queue.drains(within: .seconds(10)))
        }
        try await queue.delay("other", for: .zero, value: ["bad4"])
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 4 })
      }
      let failures = try await queue.failures()
      #expect(failures.map(\.value) == [["bad1"], ["bad2"], ["bad3"], ["bad4"]])
      #expect(failures.map(\.key) == ["k", "k", "k", "other"])
      let ids = failures.map(\.id)
      #expect(ids == ids.sorted() && Set(ids).count == 4)
      #expect(try await queue.rawFailures().map(\.id) == ids)
      #expect(await runs.values("k") == [["bad1"], ["bad2"], ["good"], ["bad3"]])
      #expect(try await queue.pendingCount() == 0)
      #expect(try await queue.isPending("k") == false)

      // One by id: the others stay.
      #expect(try await queue.discardFailure(id: ids[1]))
      #expect(try await queue.discardFailure(id: ids[1]) == false)
      #expect(try await queue.retryFailure(id: ids[1]) == false)
      #expect(try await queue.failures().map(\.id) == [ids[0], ids[2], ids[3]])

      // All of a key's, oldest first, each a burst of its own with its own value.
      failing.withLock { $0 = false }
      try await queue.withWorker(handler: handler) { () async throws in
        #expect(try await queue.retryFailure("k"))
        #expect(try await queue.failures().map(\.id) == [ids[3]])
        #expect(try await queue.drains(within: .seconds(10)))
      }
      #expect(
        await runs.values("k") == [["bad1"], ["bad2"], ["good"], ["bad3"], ["bad1"], ["bad3"]])
      #expect(try await queue.retryFailure("k") == false)

      // One by id runs again; discarding by key removes every one of the key's.
      try await queue.withWorker(handler: handler) { () async throws in
        #expect(try await queue.retryFailure(id: ids[3]))
        #expect(try await queue.drains(within: .seconds(10)))
      }
      #expect(await runs.values("other") == [["bad4"], ["bad4"]])
      #expect(try await queue.failures().isEmpty)
      failing.withLock { $0 = true }
      try await queue.withWorker(handler: handler) { () async throws in
        for value in ["bad5", "bad6"] {
          try await queue.delay("k", for: .zero, value: [value])
          #expect(try await queue.drains(within: .seconds(10)))
        }
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 2 })
      }
      #expect(try await queue.discardFailure("k"))
      #expect(try await queue.failures().isEmpty)
      #expect(try await queue.discardFailure("k") == false)
    }
  }

  /// A submission that arrives while a failed head waits for its retry starts a burst behind
  /// it: the failed head keeps its own value, and is kept with it once its attempts are spent.
  /// At a database time the test sets: the retry comes exactly after its backoff.
  @Test(arguments: [ReferenceModel.Merge.append, .replace])
  func aSubmissionDuringTheRetryBackoffDoesNotJoinTheFailedHead(merge: ReferenceModel.Merge)
    async throws
  {
    try await PostgresRuleTests.withStore("kept-backoff", merge: merge, maxAttempts: 2) {
      store, queue, client in
      let head = merge == .append ? #"["v1"]"# : #""v1""#
      try await store.submit([.init(key: 0, milliseconds: 0, value: "v1")])
      let first = try #require(try await store.claim(maxAttempts: 2).first)
      #expect(first.json == head)
      #expect(try await store.fail(first, maxAttempts: 2, backoffMilliseconds: 2000) == .retried)
      // The head waits for its retry, at 2000; a submission meanwhile starts a burst behind it.
      try await store.setNow(100)
      try await store.submit([.init(key: 0, milliseconds: 0, value: "v2")])
      #expect(try await store.readDue()[0]?.at == 2000)
      try await store.setNow(1999)
      #expect(try await store.claim(maxAttempts: 2).isEmpty)
      try await store.setNow(2000)
      let retry = try #require(try await store.claim(maxAttempts: 2).first)
      #expect(retry.json == head && retry.attempt == 2)
      #expect(try await store.fail(retry, maxAttempts: 2, backoffMilliseconds: 2000) == .kept)
      let behind = try await store.claim(maxAttempts: 2)
      #expect(behind.map(\.json) == [merge == .append ? #"["v2"]"# : #""v2""#])
      #expect(try await store.succeed(behind) == 1)
      #expect(try await queue.pendingCount() == 0)
      // The kept failure, as stored: the head's own value, after 2 attempts.
      let kept = try await client.query(
        "SELECT value::text, attempts FROM dpd_failures WHERE name = \(queue.name)")
      var failures: [(value: String, attempts: Int)] = []
      for try await (value, attempts) in kept.decode((String, Int).self) {
        failures.append((value, attempts))
      }
      #expect(failures.map(\.value) == [head] && failures.map(\.attempts) == [2])
    }
  }

  /// A failure retried while its key runs a burst runs right after it, with its own value: a
  /// submission that comes after the retry starts a burst behind it, never replaces it.
  @Test func aRetriedFailureRunsAfterTheRunningBurstAndTakesNoSubmission() async throws {
    try await Self.withQueue("kept-reentry", merge: .replace, maxAttempts: 1) { queue, _ in
      let runs = Runs<[String]>()
      let failing = Locked(true)
      let release = Latch()
      try await queue.withWorker(
        handler: { key, values in
          await runs.add(key, values)
          if values == ["running"] { try await release.wait() }
          if failing.withLock({ $0 }), values == ["old"] { throw Refused() }
        }
      ) {
        try await queue.delay("k", for: .zero, value: ["old"])
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        failing.withLock { $0 = false }
        try await queue.delay("k", for: .zero, value: ["running"])
        #expect(try await TestDatabase.eventually { await runs.all.count == 2 })
        #expect(try await queue.retryFailure("k"))
        try await queue.delay("k", for: .zero, value: ["new"])
        try await queue.delay("k", for: .zero, value: ["newer"])
        release.open()
        #expect(try await queue.drains(within: .seconds(10)))
      }
      #expect(await runs.values("k") == [["old"], ["running"], ["old"], ["newer"]])
      #expect(try await queue.failures().isEmpty)
    }
  }

  /// A failure retried while its key's burst waits for its first run runs first, now, and the
  /// waiting burst keeps its deadline and its submissions. At a database time the test sets.
  @Test func aRetriedFailureRunsBeforeAWaitingBurstThatKeepsItsDeadline() async throws {
    try await PostgresRuleTests.withStore("kept-before", merge: .append, maxAttempts: 1) {
      store, queue, _ in
      try await store.submit([.init(key: 0, milliseconds: 0, value: "old")])
      let old = try #require(try await store.claim(maxAttempts: 1).first)
      #expect(try await store.fail(old, maxAttempts: 1, backoffMilliseconds: 20) == .kept)
      try await store.setNow(100)
      try await store.submit([.init(key: 0, milliseconds: 5000, value: "w1")])
      try await store.setNow(200)
      #expect(try await store.retryFailures(of: 0) == 1)
      try await store.submit([.init(key: 0, milliseconds: 5000, value: "w2")])
      // The retried failure is due now, before the burst (due at 5200 by w2's delay).
      let retried = try await store.claim(maxAttempts: 1)
      #expect(retried.map(\.json) == [#"["old"]"#])
      #expect(try await store.succeed(retried) == 1)
      #expect(try await queue.isPending("k0"))
      #expect(try await store.readDue()[0]?.at == 5200)
      try await store.setNow(5199)
      #expect(try await store.claim(maxAttempts: 1).isEmpty)
      try await store.setNow(5200)
      let waiting = try await store.claim(maxAttempts: 1)
      #expect(waiting.map(\.json) == [#"["w1", "w2"]"#])
      #expect(try await store.succeed(waiting) == 1)
      #expect(try await queue.pendingCount() == 0)
      #expect(try await queue.failures().isEmpty)
    }
  }
}
