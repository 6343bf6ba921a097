import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `minimumSpacing` kept by workers in real time (T1 and T3 on the PostgreSQL queue): runs of one
/// key start at least the spacing apart on the database's clock, whichever worker (process or
/// client) ran the previous one, a retry waits for the spacing, a worker wakes at a spacing's end,
/// and a running worker sweeps the rows kept for a spacing once it has passed. Real time is the
/// subject here, as it is for fire lateness: each worker sleeps until the next instant the
/// database gives it, and these tests check that it wakes then and that its replicas agree. The
/// rules themselves are checked at exact database instants in ``PostgresSpacingTests`` and by
/// the store's model tests. Every time here is read on the database's clock: a trigger records
/// each claim (where a run starts in the database), and handlers record when they start.
/// Serialized: real time on a loaded machine.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresSpacingWorkerTests {
  /// T1 and T4 with one worker in real time: one key submitted to every 10 ms under
  /// `.throttle(600 ms)` runs once per spacing, at the spacing's end and not much later (the
  /// worker's wake-up), with the latest value; the first submission runs without waiting for a
  /// spacing; the last one runs, last.
  @Test func aWorkerRunsAThrottledKeyAtEachSpacingsEnd() async throws {
    let spacing = 0.6
    try await TestDatabase.withQueue("spacing-one", options: .throttle(.seconds(spacing))) {
      queue, client in
      try await ClaimLog.recording(queue.name, client: client) { log in
        let runs = StartedRuns()
        let worker = Task {
          try await queue.run { run in
            try await runs.record(run, value: run.value, worker: "1", client: client)
          }
        }
        // Once the worker runs (another key, which has a spacing of its own), the first
        // submission of the key runs without a spacing before it.
        try await queue.delay("warm-up", for: .zero, value: "w")
        #expect(try await TestDatabase.eventually { !runs.all.isEmpty })
        let firstSent = try await StartedRuns.databaseNow(client)
        var sent = 0
        while sent < 300 {
          try await queue.delay("hot", for: .zero, value: "\(sent)")
          sent += 1
          try await Task.sleep(for: .milliseconds(10))
        }
        let drained = try await queue.drains(within: .seconds(10))
        try await Task.sleep(for: .seconds(spacing + 0.2))  // no run comes after the last
        worker.cancel()
        try await worker.value
        #expect(drained)

        let all = runs.all.filter { $0.key == "hot" }.sorted { $0.fence < $1.fence }
        let claims = try await log.claims()
        let spaced = Spacing(all, claims: claims)
        print("throttled key, one worker, \(sent) submissions, spacing \(spacing) s: \(spaced)")
        #expect(all.count >= 4)
        #expect(spaced.unlogged == 0)
        #expect(spaced.minimumBetweenStarts >= spacing, "\(spaced)")
        #expect(spaced.minimumAfterClaim >= spacing, "\(spaced)")
        // At the spacing's end, not later (a loaded machine gets 250 ms).
        #expect(Spacing.median(spaced.claimGaps) < spacing + 0.25, "\(spaced)")
        // The first submission after a quiet time runs without waiting for a spacing: sooner than
        // the spacing after it was sent.
        let firstClaim = try #require(all.first.flatMap { claims[$0.fence] })
        #expect(firstClaim - firstSent < spacing, "first run \(firstClaim - firstSent) s after")
        // Each run has the newest value: values only grow, and the last one ran last.
        let values = all.compactMap { Int($0.value) }
        #expect(values.count == all.count)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "\(values)")
        #expect(values.last == sent - 1)
        #expect(try await queue.pendingCount() == 0)
      }
    }
  }

  /// T1 across replicas: two worker processes run one key submitted to every 15 ms, with handlers
  /// of 0 to 20 ms (so the key's next burst is submitted during a run or after it, when only the
  /// key's kept last start holds the spacing); one process is stopped right after it ran the
  /// key, so the other one runs it next. Handlers of the key, whichever process ran the run
  /// before, start at least the spacing after that run's handler, and after its claim.
  @Test func twoWorkerProcessesKeepTheSpacingOfOneKey() async throws {
    let spacing = 0.7
    try await TestDatabase.withQueue(
      "spacing-replicas", options: .throttle(.seconds(spacing))
    ) { queue, client in
      try await RunTable.create(client)
      try await ClaimLog.recording(queue.name, client: client) { log in
        let workers = try await PostgresReplicaTests.startWorkers(
          2, name: queue.name,
          [
            "--minimum-spacing-ms", "\(Int(spacing * 1000))", "--concurrency", "2",
            "--handler-max-ms", "20",
          ])
        let producer = Task {
          var sent = 0
          while sent < 450 {
            try await queue.delay("hot", for: .zero, value: "\(sent)")
            sent += 1
            try await Task.sleep(for: .milliseconds(15))
          }
          return sent
        }
        // Once the key ran a few times, stop whichever process ran it last: the other one
        // runs it next, with no memory of its own of when the key last ran.
        let ranThrice = try await TestDatabase.eventually(within: .seconds(30)) {
          try await Self.recordedRuns(queue.name, client).count >= 3
        }
        #expect(ranThrice)
        let last = try #require(try await Self.recordedRuns(queue.name, client).last)
        let stopped = try #require(
          workers.first { "\($0.process.processIdentifier)" == last.worker })
        stopped.signal(SIGTERM)
        let survivors = workers.filter { $0 !== stopped }
        let sent = try await producer.value
        let drained = try await queue.drains(within: .seconds(20))
        let stoppedExit = try await stopped.waitForExit()
        try await PostgresReplicaTests.stop(survivors)
        #expect(drained)
        #expect(stoppedExit?.status == 0, "\(stopped.errorText())")

        let runs = try await Self.recordedRuns(queue.name, client)
        let spaced = Spacing(runs, claims: try await log.claims())
        print("throttled key, two worker processes, spacing \(spacing) s: \(spaced)")
        #expect(runs.count >= 5)
        #expect(spaced.unlogged == 0)
        #expect(spaced.minimumBetweenStarts >= spacing, "\(spaced)")
        #expect(spaced.minimumAfterClaim >= spacing, "\(spaced)")
        #expect(spaced.acrossWorkers >= 1)
        let values = runs.compactMap { Int($0.value) }
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "\(values)")
        #expect(values.last == sent - 1)
        #expect(try await RunTable(client: client, name: queue.name).overlaps() == 0)
      }
    }
  }

  /// The runs that worker processes recorded in `dpd_test_runs`, in fence order.
  static func recordedRuns(_ name: String, _ client: PostgresClient) async throws -> [StartedRun] {
    var runs: [StartedRun] = []
    let rows = try await client.query(
      """
      SELECT key, value, fence, worker, extract(epoch FROM started)::float8, monotonic
      FROM dpd_test_runs WHERE name = \(name) ORDER BY fence
      """)
    for try await (key, value, fence, worker, started, monotonic) in rows.decode(
      (String, String, Int64, String, Double, Double).self)
    {
      runs.append(
        StartedRun(
          key: key, value: value, fence: fence, attempt: 0, started: started,
          monotonic: monotonic, worker: worker))
    }
    return runs
  }

  /// No growth: a running worker removes the records of 300 keys once their spacing has passed
  /// (more than one claim sweeps), none while the spacing from its key's claim lasts, the last
  /// one soon after its spacing.
  @Test func aRunningWorkerRemovesTheRecordsOnceTheirSpacingHasPassed() async throws {
    let spacing = 3.0
    try await TestDatabase.withQueue(
      "spacing-sweep", options: DelayOptions(minimumSpacing: .seconds(spacing))
    ) { queue, client in
      try await ClaimLog.recording(queue.name, client: client) { log in
        let ran = Locked<[String]>([])
        try await queue.withWorker(handler: { key, _ in ran.withLock { $0.append(key) } }) {
          for index in 0..<300 { try await queue.delay("k\(index)", for: .zero, value: "v") }
          #expect(try await queue.drains(within: .seconds(20)))
          // Every run's end has been recorded. The record of each key claimed less than the
          // spacing ago (with 10 ms to spare) is there; older ones may be gone.
          let kept = try await Self.keptRecords(queue.name, client)
          let claimed = try await log.latestClaimByKey()
          let young = Set(claimed.filter { $0.value + spacing - 0.01 > kept.now }.keys)
          #expect(young.count >= 1)
          #expect(young.isSubset(of: kept.keys), "\(young.subtracting(kept.keys).count) missing")
          #expect(claimed.count == 300)
          try await Self.expectAllGone(queue.name, client, after: kept, runs: ran.withLock(\.count))
        }
        #expect(Set(ran.withLock { $0 }).count == 300)
      }
    }
  }

  /// The idle rows of a queue: their keys, the latest `due_at` among them, and the database's now
  /// (Unix seconds).
  static func keptRecords(_ name: String, _ client: PostgresClient) async throws
    -> (keys: Set<String>, latest: Double, now: Double)
  {
    var kept = (keys: Set<String>(), latest: 0.0, now: 0.0)
    let rows = try await client.query(
      """
      SELECT key, extract(epoch FROM due_at)::float8, extract(epoch FROM clock_timestamp())::float8
      FROM dpd_bursts WHERE name = \(name) AND idle
      """)
    for try await (key, due, now) in rows.decode((String, Double, Double).self) {
      kept.keys.insert(key)
      kept.latest = max(kept.latest, due)
      kept.now = now
    }
    if kept.now == 0 { kept.now = try await StartedRuns.databaseNow(client) }
    return kept
  }

  /// Waits until the queue has no rows; expects that to happen no sooner than the latest kept
  /// record's spacing ended, and within two seconds after it.
  static func expectAllGone(
    _ name: String, _ client: PostgresClient,
    after kept: (keys: Set<String>, latest: Double, now: Double), runs: Int
  ) async throws {
    var goneAt: Double?
    let end = ContinuousClock.now + .seconds(max(0, kept.latest - kept.now) + 10)
    while ContinuousClock.now < end {
      if try await KeyRow.count(in: name, client: client) == 0 {
        goneAt = try await StartedRuns.databaseNow(client)
        break
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    let gone = try #require(goneAt, "the records were not removed")
    print(
      "sweep: \(runs) runs; \(kept.keys.count) records kept after the last run; the last one "
        + "gone \(String(format: "%.0f", (gone - kept.latest) * 1000)) ms after its spacing")
    #expect(gone >= kept.latest)
    #expect(gone < kept.latest + 2.0)
  }

  /// T1 with `.append` on two workers of separate clients: every value reaches a handler once,
  /// in order, also those submitted while the key runs (they wait behind the run, then for the
  /// spacing), and runs start at least the spacing apart.
  @Test func appendUnderSpacingKeepsEveryValueAcrossTwoWorkers() async throws {
    let spacing = 0.4
    let name = TestDatabase.uniqueName("spacing-append")
    try await TestDatabase.withClient { client, configuration in
      try await TestDatabase.withClient { otherClient, otherConfiguration in
        func queue(_ client: PostgresClient, _ configuration: PostgresClient.Configuration)
          -> PostgresDelayedPreemptiveQueue<[String]>
        {
          var queue = PostgresDelayedPreemptiveQueue<[String]>(
            client: client, configuration: configuration, name: name,
            options: .throttle(.seconds(spacing)), merge: .append)
          queue.safetyPoll = .milliseconds(200)
          return queue
        }
        let submitter = queue(client, configuration)
        try await submitter.migrate()
        try await ClaimLog.recording(name, client: client) { log in
          let runs = StartedRuns()
          let replicas = [
            (queue: submitter, worker: "1", client: client),
            (queue: queue(otherClient, otherConfiguration), worker: "2", client: otherClient),
          ]
          var workers: [Task<Void, any Error>] = []
          for replica in replicas {
            workers.append(
              Task {
                try await replica.queue.run(concurrency: 2) { run in
                  let json = try JSONEncoder().encode(run.value)
                  try await runs.record(
                    run, value: String(decoding: json, as: UTF8.self), worker: replica.worker,
                    client: replica.client)
                  try await Task.sleep(for: .milliseconds(60))
                }
              })
          }
          var sent: [String] = []
          for index in 0..<250 {
            try await submitter.delay("hot", for: .zero, value: ["\(index)"])
            sent.append("\(index)")
            try await Task.sleep(for: .milliseconds(10))
          }
          let drained = try await submitter.drains(within: .seconds(15))
          for worker in workers { worker.cancel() }
          for worker in workers { try await worker.value }
          #expect(drained)

          let all = runs.all.sorted { $0.fence < $1.fence }
          let received = try all.flatMap {
            try JSONDecoder().decode([String].self, from: Data($0.value.utf8))
          }
          let spaced = Spacing(all, claims: try await log.claims())
          print(
            "append under spacing, two workers: \(sent.count) values in \(all.count) runs; "
              + "\(spaced)")
          #expect(received == sent)
          #expect(spaced.unlogged == 0)
          #expect(spaced.minimumBetweenStarts >= spacing, "\(spaced)")
          #expect(spaced.minimumAfterClaim >= spacing, "\(spaced)")
          #expect(all.count >= 4)
        }
      }
    }
  }

  /// A retry is a run too: a handler that threw runs again no sooner than the spacing after its
  /// failed run's handler started, though its backoff is shorter.
  @Test func aRetryWaitsForTheSpacing() async throws {
    let spacing = 0.8
    try await TestDatabase.withQueue(
      "spacing-retry", options: DelayOptions(minimumSpacing: .seconds(spacing)),
      retryBackoff: .milliseconds(50)
    ) { queue, client in
      try await ClaimLog.recording(queue.name, client: client) { log in
        // A worker with a lease that a loaded machine keeps (a run whose lease is lost has no
        // end recorded, and is taken over the spacing after its claim).
        let logs = LogCollector()
        var logged = PostgresDelayedPreemptiveQueue<String>(
          client: client, name: queue.name, options: queue.options, lease: .seconds(10),
          logger: logs.logger())
        logged.retryBackoff = queue.retryBackoff
        logged.safetyPoll = queue.safetyPoll
        let runs = StartedRuns()
        let worker = Task { [logged] in
          try await logged.run { run in
            try await runs.record(run, value: run.value, worker: "1", client: client)
            if run.attempt == 1 { throw Refused() }
          }
        }
        try await queue.delay("retried", for: .zero, value: "r")
        let retried = try await TestDatabase.eventually { runs.all.count == 2 }
        worker.cancel()
        try await worker.value
        #expect(retried)

        let claims = try await log.claims()
        let retry = Spacing(runs.all, claims: claims)
        print("retry: \(retry)")
        #expect(runs.all.map(\.attempt) == [1, 2])
        #expect(retry.minimumBetweenStarts >= spacing, "\(retry)")
        #expect(retry.minimumAfterClaim >= spacing, "\(retry)")
        let warnings = logs.lines.filter { $0.level >= .warning }
        #expect(warnings.isEmpty, "\(warnings)")
      }
    }
  }

  struct Refused: Error {}
}
