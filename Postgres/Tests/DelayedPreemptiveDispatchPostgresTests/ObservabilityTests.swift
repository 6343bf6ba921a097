import Foundation
import Logging
import MetricsTestKit
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P9 against the real server: after known runs (succeeded, retried, failed, lease lost)
/// the metrics hold the expected counts, and a lost lease logs its warning. The metrics go to a
/// `TestMetrics` given to the queue, never to a global bootstrap.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresObservabilityTests {
  struct Refused: Error {}

  /// What the known runs did: `ok` succeeds; `flaky` throws once, then succeeds; `bad` throws
  /// in both of its runs (maxAttempts 2) and is kept as failed; `stolen` has its claim stolen
  /// during its first run (cancelled, lease lost) and succeeds when it is taken over.
  struct KnownRuns: Sendable {
    let name: String
    let runs: RunList
    let stolenCancelled: Latch
  }

  /// Runs the known runs on a queue with `metrics` and `logger`, a 1 s lease and maxAttempts 2,
  /// until every burst has finished or failed for good.
  static func knownRuns(
    metrics: TestMetrics = TestMetrics(),
    logger: Logger = PostgresDelayedPreemptiveQueue<String>.silentLogger
  ) async throws -> KnownRuns {
    try await TestDatabase.withClient { client, configuration in
      // A lease of 3 s: a run's lease counts from the moment its claim was sent, and a worker
      // that finds it passed records nothing (it counts the run as lost). With 1 s, a claim
      // statement slowed by the whole group running beside it on 2 cores lost a second run in
      // 2 of 5 runs of the group (`flaky`'s first, where the log was printed), where the
      // scenario has `stolen` alone lose its lease. The steal below still takes the lease away
      // within one renewal (a third of it).
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("observe"),
        lease: .seconds(3), maxAttempts: 2, logger: logger, metricsFactory: metrics)
      queue.retryBackoff = .milliseconds(20)
      queue.safetyPoll = .milliseconds(200)
      try await queue.migrate()
      let known = KnownRuns(name: queue.name, runs: RunList(), stolenCancelled: Latch())
      let stolenStarted = Latch()
      let worker = Task { [queue] in
        try await queue.run { run in
          known.runs.append(run.key, "\(run.attempt)")
          switch (run.key, run.attempt) {
          case ("flaky", 1), ("bad", _): throw Refused()
          case ("stolen", 1):
            stolenStarted.open()
            do {
              try await Task.sleep(for: .seconds(60))
            } catch {
              known.stolenCancelled.open()
              throw error
            }
          default: return
          }
        }
      }
      defer { worker.cancel() }
      for key in ["ok", "flaky", "bad", "stolen"] {
        try await queue.delay(key, for: .zero, value: key)
      }
      #expect(try await TestDatabase.eventually(within: .seconds(30)) { stolenStarted.isOpen })
      // Another claim replaces this run's: its next renewal finds it gone.
      try await client.query(
        """
        UPDATE dpd_bursts SET claim = gen_random_uuid() WHERE name = \(queue.name) AND key = 'stolen'
        """)
      #expect(try await TestDatabase.eventually { known.stolenCancelled.isOpen })
      // `stolen` runs again once the stolen claim's lease has run out.
      #expect(try await queue.drains(within: .seconds(30)))
      #expect(try await queue.failures().map(\.key) == ["bad"])
      worker.cancel()
      try await worker.value
      return known
    }
  }

  @Test func countersAndTimersHoldTheKnownRuns() async throws {
    let metrics = TestMetrics()
    let known = try await Self.knownRuns(metrics: metrics)
    let queue = [("queue", known.name)]
    func runs(_ outcome: String) throws -> Int64 {
      try metrics.expectCounter("dpd.postgres.runs", queue + [("outcome", outcome)]).totalValue
    }
    #expect(known.runs.values("ok") == ["1"])
    #expect(known.runs.values("flaky") == ["1", "2"])
    #expect(known.runs.values("bad") == ["1", "2"])
    #expect(known.runs.values("stolen") == ["1", "2"])
    #expect(try metrics.expectCounter("dpd.postgres.submissions", queue).totalValue == 4)
    #expect(try runs("succeeded") == 3)  // ok, flaky's second run, stolen's second run
    #expect(try runs("retried") == 2)  // flaky's and bad's first runs
    #expect(try runs("failed") == 1)  // bad's second run
    #expect(try runs("lease_lost") == 1)  // stolen's first run
    #expect(try metrics.expectCounter("dpd.postgres.takeovers", queue).totalValue == 1)
    // One value per run: 7 runs.
    #expect(try metrics.expectTimer("dpd.postgres.lateness", queue).values.count == 7)
    #expect(try metrics.expectTimer("dpd.postgres.run.duration", queue).values.count == 7)
    #expect(try metrics.expectTimer("dpd.postgres.lateness", queue).values.allSatisfy { $0 >= 0 })
    // Sampled when the worker starts.
    #expect(try !metrics.expectGauge("dpd.postgres.pending", queue).values.isEmpty)
    #expect(try !metrics.expectGauge("dpd.postgres.overdue.age", queue).values.isEmpty)
    // Never the key as a dimension: only the queue, and the outcome of a run.
    let dimensions =
      metrics.counters.map(\.dimensions) + metrics.timers.map(\.dimensions)
      + metrics.recorders.map(\.dimensions)
    for dimension in dimensions {
      #expect(dimension.allSatisfy { ["queue", "outcome"].contains($0.0) }, "\(dimension)")
      #expect(dimension.contains { $0 == ("queue", known.name) }, "\(dimension)")
    }
  }

  /// The pending gauge follows the worker's own runs: sampled 5 when the worker starts (five
  /// bursts due a little later), it reads 0 soon after the last of them has ended, not only at
  /// the next five-second sample.
  @Test func pendingGaugeFollowsTheWorkersOwnRuns() async throws {
    let metrics = TestMetrics()
    try await TestDatabase.withClient { client, configuration in
      var configured = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("pending"),
        metricsFactory: metrics)
      configured.safetyPoll = .milliseconds(200)
      let queue = configured
      try await queue.migrate()
      for index in 1...5 {
        try await queue.delay("k\(index)", for: .milliseconds(1500), value: "v")
      }
      let dimensions = [("queue", queue.name)]
      @Sendable func pending() -> [Double] {
        (try? metrics.expectGauge("dpd.postgres.pending", dimensions).values) ?? []
      }
      try await queue.withWorker(handler: { _, _ in }) { () async throws in
        #expect(try await TestDatabase.eventually { pending().first == 5 }, "\(pending())")
        #expect(try await queue.drains(within: .seconds(30)))
        let drained = ContinuousClock.now
        #expect(try await TestDatabase.eventually { pending().last == 0 }, "\(pending())")
        let late = ContinuousClock.now - drained
        // The five-second sample would come at least 3.5 s after the drain; a refresh after the
        // runs comes within a query's time of 200 ms. A loaded machine gets a wide margin.
        #expect(late < .seconds(2), "the gauge read 0 only \(late) after the drain: \(pending())")
      }
    }
  }

  /// A large backlog spaces the samples of the gauges: after counting 10^5 waiting bursts, the
  /// next sample waits 10 s (100 µs per burst), while a run ends every 100 ms: in 3 s the
  /// worker samples no more (one more is allowed for a margin), not five times a second as it
  /// does for a small queue (`pendingGaugeFollowsTheWorkersOwnRuns`).
  @Test func aLargeBacklogSpacesTheSamplesOfTheGauges() async throws {
    let metrics = TestMetrics()
    try await TestDatabase.withClient { client, configuration in
      var configured = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("sampling"),
        metricsFactory: metrics)
      configured.safetyPoll = .milliseconds(200)
      let queue = configured
      try await queue.migrate()
      // The backlog: 10^5 bursts due in an hour, written in one statement.
      try await client.query(
        """
        INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
        SELECT \(queue.name), 'backlog-' || i, '"v"'::jsonb, d.t, d.t, d.t
        FROM generate_series(1, 100000) AS i,
          (SELECT clock_timestamp() + interval '1 hour' AS t) AS d
        """)
      let dimensions = [("queue", queue.name)]
      @Sendable func samples() -> [Double] {
        (try? metrics.expectGauge("dpd.postgres.pending", dimensions).values) ?? []
      }
      try await queue.withWorker(handler: { _, _ in }) { () async throws in
        #expect(try await TestDatabase.eventually { samples().first ?? 0 >= 100_000 })
        let first = samples().count
        for index in 0..<30 {
          try await queue.delay("k\(index)", for: .zero, value: "v")
          try await Task.sleep(for: .milliseconds(100))
        }
        // Without the rest, the 30 runs' ends would take a sample every 200 ms or so.
        #expect(samples().count - first <= 1, "\(samples().count - first) samples after the first")
      }
      try await client.query("DELETE FROM dpd_bursts WHERE name = \(queue.name)")
    }
  }

  @Test func lostLeaseLogsAWarningWithTheQueueNameAndTheKeyOnlyAtDebug() async throws {
    let logs = LogCollector()
    let known = try await Self.knownRuns(logger: logs.logger())
    let lines = logs.lines
    let lost = lines.filter { $0.level == .warning && $0.message.contains("lease lost") }
    #expect(lost.count == 1, "\(lines)")
    #expect(lost.allSatisfy { $0.metadata.contains("dpd.queue=\(known.name)") })
    #expect(logs.contains("took over a burst", atLeast: .warning))
    #expect(logs.contains("burst kept as failed", atLeast: .warning))
    #expect(logs.contains("retrying with backoff", atLeast: .info))
    // A key is named only at debug level (or trace, in the driver's own lines).
    for line in lines where line.level > .debug {
      for key in ["ok", "flaky", "bad", "stolen"] {
        #expect(!line.metadata.contains("dpd.key="), "\(line)")
        #expect(!line.message.contains("'\(key)'"), "\(line)")
      }
    }
    #expect(lines.contains { $0.level == .debug && $0.metadata.contains("dpd.key=stolen") })
  }
}
