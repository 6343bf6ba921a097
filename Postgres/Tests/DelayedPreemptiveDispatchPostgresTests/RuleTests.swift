import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchModel
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rules P1 to P3 and P5 one by one, at a database time the test sets (`dpd.now`): the queue's
/// own statements, sent as its worker sends them, on one connection (``StoreHarness``), so each
/// rule is checked at its exact instant, and beside the reference model, with no waiting. The
/// worker's own part (a handler that throws, its error kept) is `aThrowingHandlerIsRetriedAndKept`,
/// which waits only for the outcome.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresRuleTests {
  /// Runs `body` with a store of a fresh queue under `options`, at database time 0, with the
  /// queue and the test's client.
  static func withStore(
    _ prefix: String, options: DelayOptions = DelayOptions(),
    merge: ReferenceModel.Merge = .replace, maxAttempts: Int = 5,
    retryBackoff: Duration = .seconds(1),
    _ body:
      @Sendable (inout StoreHarness, PostgresDelayedPreemptiveQueue<String>, PostgresClient)
      async throws -> Void
  ) async throws {
    try await TestDatabase.withQueue(
      prefix, options: options, maxAttempts: maxAttempts, retryBackoff: retryBackoff
    ) { queue, client in
      try await StoreHarness.on(client, name: queue.name, options: options, merge: merge) {
        store in
        try await body(&store, queue, client)
      }
    }
  }

  @Test func extendKeepsTheLaterDeadlineAndTheLastValue() async throws {
    try await Self.withStore("extend") { store, queue, _ in
      try await store.expect(.delay(key: 0, milliseconds: 1000, value: "first"))
      try await store.expect(.advance(milliseconds: 10))
      // Due at 60 by itself: the burst keeps the later deadline, 1000.
      try await store.expect(.delay(key: 0, milliseconds: 50, value: "second"))
      try await store.expect(.advance(milliseconds: 989))
      #expect(store.runs[0].isEmpty)
      try await store.expect(.advance(milliseconds: 1))
      #expect(store.runs[0] == [.init(work: "second", at: 1000)])
      #expect(try await queue.pendingCount() == 0)
    }
  }

  @Test func restartSetsTheDeadlineFromTheLastSubmission() async throws {
    try await Self.withStore("restart", options: DelayOptions(deadlinePolicy: .restart)) {
      store, _, _ in
      try await store.expect(.delay(key: 0, milliseconds: 5000, value: "far"))
      try await store.expect(.advance(milliseconds: 10))
      try await store.expect(.delay(key: 0, milliseconds: 100, value: "near"))
      try await store.expect(.advance(milliseconds: 99))
      #expect(store.runs[0].isEmpty)
      try await store.expect(.advance(milliseconds: 1))
      #expect(store.runs[0] == [.init(work: "near", at: 110)])
      try await store.expect(.advance(milliseconds: 6000))
      #expect(store.runs[0].count == 1)
    }
  }

  /// Each submission asks for 1 s, so each one moves the deadline 1 s past itself: without
  /// `maxWait`, submissions every 40 ms would never let the burst run. With 300 ms, it runs at
  /// 300 ms after its first submission, with the last value.
  @Test func maxWaitBoundsABurstThatKeepsBeingExtended() async throws {
    try await Self.withStore("maxwait", options: DelayOptions(maxWait: .milliseconds(300))) {
      store, _, _ in
      for index in 1...8 {
        if index > 1 { try await store.expect(.advance(milliseconds: 40)) }
        try await store.expect(.delay(key: 0, milliseconds: 1000, value: "v\(index)"))
      }
      try await store.expect(.advance(milliseconds: 19))
      #expect(store.runs[0].isEmpty)
      try await store.expect(.advance(milliseconds: 1))
      #expect(store.runs[0] == [.init(work: "v8", at: 300)])
      // The next submission starts the next burst, whose window counts from it: due at 600,
      // before its own deadline of 1300.
      try await store.expect(.delay(key: 0, milliseconds: 1000, value: "v9"))
      try await store.expect(.advance(milliseconds: 299))
      #expect(store.runs[0].count == 1)
      try await store.expect(.advance(milliseconds: 1))
      #expect(store.runs[0] == [.init(work: "v8", at: 300), .init(work: "v9", at: 600)])
    }
  }

  @Test func manySubmissionsOfOneBurstRunOnceWithTheLastValue() async throws {
    try await Self.withStore("once") { store, queue, _ in
      for index in 1...20 {
        try await store.expect(.delay(key: 0, milliseconds: 2000, value: "v\(index)"))
      }
      #expect(try await queue.isPending("k0"))
      try await store.expect(.advance(milliseconds: 2000))
      #expect(store.runs[0] == [.init(work: "v20", at: 2000)])
      #expect(try await queue.isPending("k0") == false)
    }
  }

  @Test func cancelDropsThePendingBurstAndFlushRunsItNow() async throws {
    try await Self.withStore("cancel-flush") { store, _, _ in
      try await store.expect(.delay(key: 0, milliseconds: 1000, value: "never"))
      try await store.expect(.cancel(key: 0))
      #expect(store.answered == true)
      try await store.expect(.cancel(key: 0))
      #expect(store.answered == false)
      try await store.expect(.advance(milliseconds: 5))
      try await store.expect(.delay(key: 1, milliseconds: 60_000, value: "now"))
      try await store.expect(.flush(key: 1))
      #expect(store.answered == true)
      #expect(store.runs[1] == [.init(work: "now", at: 5)])
      try await store.expect(.flush(key: 1))
      #expect(store.answered == false)
      // Past the cancelled burst's deadline.
      try await store.expect(.advance(milliseconds: 1200))
      #expect(store.runs[0].isEmpty)
      #expect(store.runs[1].count == 1)
    }
  }

  /// Submissions during a run start the next burst, which runs after the run ends (never beside
  /// it), with the last value; and the claim during the run finds nothing of the key.
  @Test func submissionDuringARunStartsABurstThatRunsAfterIt() async throws {
    try await Self.withStore("during-run") { store, queue, _ in
      try await store.submit([.init(key: 0, milliseconds: 0, value: "one")])
      let first = try await store.claim()
      #expect(first.map(\.json) == ["\"one\""])
      try await store.setNow(10)
      try await store.submit([.init(key: 0, milliseconds: 0, value: "two")])
      try await store.submit([.init(key: 0, milliseconds: 0, value: "three")])
      #expect(try await store.claim().isEmpty)
      try await store.setNow(1500)
      #expect(try await store.claim().isEmpty)
      #expect(try await store.succeed(first) == first.count)
      let second = try await store.claim()
      #expect(second.map(\.json) == ["\"three\""])
      #expect(try await store.succeed(second) == 1)
      #expect(try await queue.pendingCount() == 0)
    }
  }

  /// A failed run is retried after the backoff (20 ms, then 40 ms, from the failure), and after
  /// `maxAttempts` runs kept as a failure; a new submission of the key then runs as usual, and
  /// the failure stays kept (P17).
  @Test func aFailedRunIsRetriedAfterItsBackoffThenKept() async throws {
    try await Self.withStore("failures", maxAttempts: 3, retryBackoff: .milliseconds(20)) {
      store, queue, _ in
      try await store.submit([.init(key: 0, milliseconds: 0, value: "bad")])
      var outcomes: [FailedStatement.Outcome] = []
      for (attempt, failsAt) in [(1, Int64(0)), (2, 20), (3, 60)] {
        if failsAt > 0 {
          try await store.setNow(failsAt - 1)
          #expect(try await store.claim(maxAttempts: 3).isEmpty, "attempt \(attempt) too early")
          try await store.setNow(failsAt)
        }
        let claimed = try await store.claim(maxAttempts: 3)
        #expect(claimed.map(\.attempt) == [attempt])
        for burst in claimed {
          outcomes.append(try await store.fail(burst, maxAttempts: 3, backoffMilliseconds: 20))
        }
      }
      #expect(outcomes == [.retried, .retried, .kept])
      let failure = try #require(try await queue.failures().first)
      #expect(failure.key == "k0")
      #expect(failure.value == "bad")
      #expect(failure.attempts == 3)
      #expect(failure.lastError == "broken")
      #expect(try await queue.pendingCount() == 0)

      try await store.submit([.init(key: 0, milliseconds: 0, value: "good")])
      let good = try await store.claim(maxAttempts: 3)
      #expect(good.map(\.json) == ["\"good\""])
      #expect(try await store.succeed(good) == 1)
      #expect(try await queue.failures() == [failure])
    }
  }

  /// The worker's part of the rule above: a handler that throws is run `maxAttempts` times and
  /// its burst kept with the error's description. Waits only for that outcome.
  @Test func aThrowingHandlerIsRetriedAndKept() async throws {
    struct Broken: Error {}
    try await TestDatabase.withQueue(
      "throwing", maxAttempts: 3, retryBackoff: .milliseconds(20)
    ) { queue, _ in
      let log = RunLog()
      let handler: @Sendable (String, String) async throws -> Void = { key, value in
        try await log.record(key, value) { if value == "bad" { throw Broken() } }
      }
      try await queue.withWorker(handler: handler) {
        try await queue.delay("k", for: .zero, value: "bad")
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        let failure = try #require(try await queue.failures().first)
        #expect(failure.attempts == 3)
        #expect(failure.lastError.contains("Broken"))
        #expect(await log.count("k") == 3)
        #expect(try await queue.pendingCount() == 0)
      }
    }
  }

  /// The deadlines are far apart against the 250 ms within which a submission notifies anyway
  /// (below): with "c" 1 s away, a loaded machine (the main group's suites in parallel on 2
  /// cores) once took more than 750 ms between the last two calls, and "d" rightly notified.
  @Test func submissionWakesWorkersOnlyWhenItMovesTheEarliestDeadline() async throws {
    try await TestDatabase.withQueue("notify") { queue, _ async throws in
      #expect(try await queue.submit("a", for: .seconds(100), value: "x"))
      #expect(try await queue.submit("b", for: .seconds(200), value: "x") == false)
      #expect(try await queue.submit("a", for: .seconds(300), value: "x") == false)
      #expect(try await queue.submit("c", for: .seconds(10), value: "x"))
      #expect(try await queue.submit("d", for: .seconds(50), value: "x") == false)
    }
  }

  /// A worker claims the earliest burst and then reads the next deadline. A submission whose
  /// statement overlaps that claim sees the burst still waiting, and would not notify, while
  /// the worker's read does not see the submission yet: it would sleep until `safetyPoll`. So
  /// a submission notifies while the earliest burst is due, or less than 250 ms away.
  @Test func submissionNextToADueBurstWakesTheWorkers() async throws {
    try await TestDatabase.withQueue("notify-due") { queue, _ async throws in
      #expect(try await queue.submit("due", for: .zero, value: "x"))
      // Later than the due burst, so the old rule sent nothing: no worker runs here, so
      // "due" stays waiting, as it does while a worker is claiming it.
      #expect(try await queue.submit("later", for: .seconds(10), value: "x"))
      #expect(try await queue.submit("due", for: .zero, value: "y"))
    }
    try await TestDatabase.withQueue("notify-near") { queue, _ async throws in
      #expect(try await queue.submit("near", for: .milliseconds(100), value: "x"))
      #expect(try await queue.submit("later", for: .seconds(10), value: "x"))
    }
  }
}

/// What a rule test does with the store by hand: a step checked against the model, and the
/// worker's statements one at a time, at the database time the test set.
extension StoreHarness {
  /// Runs `body` with a store on one connection of `client`, at database time 0. The connection
  /// goes back to the pool with the real clock (`RESET dpd.now`), also when `body` throws: a
  /// worker or a queue of the same client would otherwise read the test's time.
  static func on(
    _ client: PostgresClient, name: String, options: DelayOptions,
    merge: ReferenceModel.Merge = .replace,
    _ body: (inout StoreHarness) async throws -> Void
  ) async throws {
    try await client.withConnection { connection in
      var store = StoreHarness(
        connection: connection, name: name, seed: 0, options: options, merge: merge)
      try await store.setNow(0)
      do {
        try await body(&store)
      } catch {
        try await store.resetClock()
        throw error
      }
      try await store.resetClock()
    }
  }

  /// The session's real clock again.
  func resetClock() async throws {
    try await connection.query("RESET dpd.now", logger: Self.logger)
  }

  /// Applies `operation` to the store and the model, and records an issue where they disagree.
  mutating func expect(
    _ operation: ModelOperation, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let disagreement = try await step(operation)
    #expect(
      disagreement == nil, "\(operation): \(disagreement ?? "")", sourceLocation: sourceLocation)
  }

  /// A worker's claim of what is due now, under a lease of `lease` milliseconds.
  func claim(maxAttempts: Int = 5, owner: String = "rules", lease: Double = 600_000)
    async throws -> [ClaimedBurst]
  {
    try await connection.rows(
      ClaimStatement(
        name: name, limit: 100, owner: owner, leaseMilliseconds: lease,
        maxAttempts: maxAttempts, minimumSpacingMilliseconds: spacing), logger: Self.logger)
  }

  /// The renewal of `claims`' leases, now; returns the claims it renewed.
  func renew(_ claims: [ClaimedBurst], lease: Double) async throws -> [UUID] {
    try await connection.rows(
      RenewStatement(
        name: name, claims: claims.map(\.claim), leaseMilliseconds: lease,
        minimumSpacingMilliseconds: spacing), logger: Self.logger)
  }

  /// The successful end of `claims`, now; returns how many it ended.
  func succeed(_ claims: [ClaimedBurst]) async throws -> Int {
    try await connection.rows(
      SucceededStatement(
        name: name, keys: claims.map(\.key), claims: claims.map(\.claim),
        minimumSpacingMilliseconds: spacing,
        millisecondsSinceHandlerStarts: claims.map { _ in 0 }), logger: Self.logger
    ).count
  }

  /// The end of `burst`'s run with the error "broken", now.
  func fail(_ burst: ClaimedBurst, maxAttempts: Int, backoffMilliseconds: Double) async throws
    -> FailedStatement.Outcome
  {
    try #require(
      try await failIfHeld(
        burst, maxAttempts: maxAttempts, backoffMilliseconds: backoffMilliseconds))
  }

  /// `retryFailure` of `key`'s kept failures, now; returns how many it took.
  func retryFailures(of key: Int) async throws -> Int {
    let statement = RetryFailuresStatement(
      name: name, selection: .key(Self.key(key)), minimumSpacingMilliseconds: spacing)
    return try await connection.scalar(statement.query, as: Int.self, logger: Self.logger) ?? 0
  }

  /// The releases of the claims of `owner` beyond `known`; returns their keys.
  func releaseUnknownClaims(owner: String, known: [UUID]) async throws -> [String] {
    try await connection.rows(
      ReleaseUnknownClaimsStatement(name: name, owner: owner, known: known), logger: Self.logger)
  }

  /// As ``fail(_:maxAttempts:backoffMilliseconds:)``; nil when the claim is no longer held.
  func failIfHeld(_ burst: ClaimedBurst, maxAttempts: Int, backoffMilliseconds: Double)
    async throws -> FailedStatement.Outcome?
  {
    let outcomes = try await connection.rows(
      FailedStatement(
        name: name, key: burst.key, claim: burst.claim, maxAttempts: maxAttempts,
        backoffMilliseconds: backoffMilliseconds, error: "broken", append: merge == .append,
        minimumSpacingMilliseconds: spacing, millisecondsSinceHandlerStart: 0),
      logger: Self.logger)
    return outcomes.first
  }
}
