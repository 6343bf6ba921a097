import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// What production does to the PostgreSQL tier: paused and killed worker processes, a backlog
/// under a short lease, database restarts and a frozen postmaster. Real processes, real
/// signals, a real server. Serialized, and run by `.ci/run` in a process of its own after the
/// other suites, so that the timings hold on a loaded 2-core machine.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresFaultTests {
  @Test func pausedWorkersRunIsCancelledOnResumeAndItsFencedWriteIsRejected() async throws {
    try await TestDatabase.withQueue("paused", lease: .seconds(4)) { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      // Each run sleeps 2 s, then makes a fenced write even when cancelled (as a stale run that
      // ignores cancellation would), then waits up to 4 s to see its cancellation.
      let flags = [
        "--lease-ms", "4000", "--handler-ms", "2000", "--fenced", "--observe-cancel-ms", "4000",
      ]
      let first = try await PostgresReplicaTests.startWorkers(1, name: queue.name, flags)[0]
      try await queue.delay("doc", for: .zero, value: "v1")
      #expect(try await TestDatabase.eventually { try await table.runs() == 1 })
      first.signal(SIGSTOP)  // 2.5 × the lease
      let second = try await PostgresReplicaTests.startWorkers(1, name: queue.name, flags)[0]
      try await Task.sleep(for: .seconds(10))
      let resumed = Date().timeIntervalSince1970
      first.signal(SIGCONT)
      let seen = try await TestDatabase.eventually(within: .seconds(15)) {
        let runs = try await table.fencedRuns()
        return runs.count == 2 && runs.allSatisfy { $0.applied != nil }
      }
      #expect(seen)
      #expect(try await queue.drains(within: .seconds(15)))
      try await PostgresReplicaTests.stop([first, second])

      let runs = try await table.fencedRuns()
      try #require(runs.count == 2)
      let (stale, fresh) = (runs[0], runs[1])
      #expect(stale.fence < fresh.fence)
      #expect(fresh.applied == true)
      #expect(stale.applied == false, "the stale run's fenced write was applied")
      let cancelledAfter = try #require(stale.cancelledAt) - resumed
      print(
        "paused: stale run cancelled \(cancelledAfter) s after its process resumed; stale "
          + "writes applied \(stale.applied == true ? 1 : 0); fences \(stale.fence) < \(fresh.fence)"
      )
      // At the latest one renewal interval (lease / 3) after it can run again, plus a margin for
      // a loaded machine.
      #expect(cancelledAfter < 4.0 / 3 + 2)
      #expect(fresh.cancelledAt == nil)
      #expect(try await table.lastValues()["doc"] == "v1")
      #expect(try await table.storedFence("doc") == fresh.fence)
    }
  }

  /// Rule P16 under a real pause: a worker SIGSTOPped inside its transactional handler, past
  /// 2.5 × its lease, is taken over; when it resumes, its transaction is rolled back, so its
  /// write never lands, with no fence column of the user's: only the fresh run's write exists.
  @Test func pausedTransactionalRunsWritesNeverLand() async throws {
    try await TestDatabase.withQueue("paused-tx", lease: .seconds(2)) { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let flags = ["--lease-ms", "2000", "--handler-ms", "1500", "--transactional", "--record"]
      let first = try await PostgresReplicaTests.startWorkers(1, name: queue.name, flags)[0]
      try await queue.delay("doc", for: .zero, value: "v1")
      // The run has started, and written in its transaction (the row is not visible yet).
      #expect(try await TestDatabase.eventually { try await table.runs() == 1 })
      first.signal(SIGSTOP)
      try await Task.sleep(for: .seconds(5))  // 2.5 × the lease
      let second = try await PostgresReplicaTests.startWorkers(1, name: queue.name, flags)[0]
      #expect(try await queue.drains(within: .seconds(30)))
      #expect(try await TestDatabase.eventually { try await table.runs(finished: true) >= 1 })
      first.signal(SIGCONT)
      try await PostgresReplicaTests.stop([first, second])

      let writes = try await table.transactionalWrites()
      let fences = try await table.fencedRuns().map(\.fence)
      print("paused transactional run: fences \(fences), committed writes \(writes)")
      try #require(fences.count == 2)
      #expect(writes.map(\.fence) == [fences[1]], "the stale run's write landed: \(writes)")
      #expect(writes.map(\.worker) == ["\(second.process.processIdentifier)"])
      #expect(try await queue.pendingCount() == 0)
    }
  }

  /// A takeover is never held up by a stale run's row locks: worker A, paused (SIGSTOP) inside
  /// its transactional handler after it wrote the key's document row, stays paused for the whole
  /// test. Worker B takes the burst over after the lease, and its claim ends A's open
  /// transaction, so B's write of the same row does not wait for A. Without that, B's write
  /// waits on A's row lock for as long as A stays paused.
  @Test func takeoverIsNotHeldUpByAPausedWorkersRowLocks() async throws {
    try await TestDatabase.withQueue("stale-locks", lease: .seconds(2)) { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let flags = [
        "--lease-ms", "2000", "--handler-ms", "3000", "--transactional", "--tx-document",
        "--log-level", "warning",
      ]
      let first = try await PostgresReplicaTests.startWorkers(1, name: queue.name, flags)[0]
      defer {
        first.signal(SIGKILL)
        first.signal(SIGCONT)
      }
      try await queue.delay("doc", for: .zero, value: "v1")
      // A's transaction has written the document row: another backend holds a row lock on it.
      #expect(
        try await TestDatabase.eventually {
          try await table.documentLockHolders() == 1
        })
      first.signal(SIGSTOP)
      let paused = ContinuousClock.now
      let second = try await PostgresReplicaTests.startWorkers(1, name: queue.name, flags)[0]
      // B runs the burst again once the lease (2 s) has run out, and its run's transaction
      // commits: its document write did not wait for A, which is still paused.
      let done = try await TestDatabase.eventually(within: .seconds(20)) {
        try await table.document("doc")?.fence ?? 0 > 0
      }
      let elapsed = ContinuousClock.now - paused
      #expect(done, "B's write waited on the paused worker's locks")
      #expect(first.process.isRunning, "A must stay paused for the whole test")
      #expect(try await queue.drains(within: .seconds(10)))
      try await PostgresReplicaTests.stop([second])

      let document = try #require(try await table.document("doc"))
      let fences = try await table.fencedRuns().map(\.fence)
      print(
        "stale locks: B committed \(elapsed) after A paused (lease 2 s); document \(document); "
          + "fences \(fences)")
      // Only B's write landed: A's transaction was ended, and rolled back with it.
      #expect(document.writes == 1, "\(document)")
      #expect(
        try await table.transactionalWrites().map(\.worker) == [
          "\(second.process.processIdentifier)"
        ])
      // The lease (2 s), the poll that finds it expired, and B's run of 3 s, with a margin for a
      // loaded machine: nowhere near as long as A stays paused.
      #expect(elapsed < .seconds(14), "\(elapsed)")
      #expect(
        second.errorText().contains("ended the stale run's open transaction"),
        "\(second.errorText())")
    }
  }

  @Test func handlerThatKillsItsWorkerIsKeptAsAFailureAfterMaxAttempts() async throws {
    try await TestDatabase.withQueue("crash-loop", lease: .seconds(1), maxAttempts: 3) {
      queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      try await queue.delay("poison", for: .zero, value: "p")
      var deaths = 0
      for _ in 0..<6 where try await queue.failures().isEmpty {
        let worker = try WorkerProcess([
          "--name", queue.name, "--record", "--crash", "--quiet", "--lease-ms", "1000",
          "--max-attempts", "3",
        ])
        await worker.waitUntilReady()
        _ = try await TestDatabase.eventually(within: .seconds(15)) {
          if !worker.process.isRunning { return true }
          return try await !queue.failures().isEmpty
        }
        if worker.process.isRunning {
          try await PostgresReplicaTests.stop([worker])
        } else {
          deaths += 1
        }
      }
      let failures = try await queue.failures()
      let runs = try await table.runs()
      print("crash loop: \(runs) runs, \(deaths) worker deaths, kept: \(failures.map(\.attempts))")
      #expect(failures.count == 1)
      #expect(failures.first?.attempts == 3)
      #expect(failures.first?.value == "p")
      #expect(runs == 3)
      #expect(deaths == 3)
      #expect(try await queue.pendingCount() == 0)
    }
  }

  /// P17 under lease expiries: a head whose workers die in each of its `maxAttempts` runs, with
  /// a burst of its key submitted behind it meanwhile, is kept with its whole array (never
  /// dropped), and the burst behind it runs as usual.
  @Test func exhaustedHeadWithABurstBehindItIsKeptAndTheBurstRuns() async throws {
    try await TestDatabase.withClient { client, configuration in
      var configured = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration,
        name: TestDatabase.uniqueName("crash-behind"), lease: .seconds(1), maxAttempts: 2,
        merge: .append)
      configured.safetyPoll = .milliseconds(200)
      let queue = configured
      try await queue.migrate()
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      // One burst of two submissions: not due for a minute, so that the second joins the first
      // on a loaded machine too (a burst that is due takes no submission, T7); `flush` then
      // makes it due.
      try await queue.delay("k", for: .seconds(60), value: ["poison-1"])
      try await queue.delay("k", for: .seconds(60), value: ["poison-2"])
      #expect(try await queue.flush("k"))
      var deaths = 0
      /// The failure is kept and the burst behind it has run.
      @Sendable func settled() async throws -> Bool {
        guard try await !queue.failures().isEmpty else { return false }
        return try await queue.pendingCount() == 0
      }
      for round in 0..<6 where try await !settled() {
        let worker = try WorkerProcess([
          "--name", queue.name, "--append", "--record", "--crash-when", "poison", "--quiet",
          "--lease-ms", "1000", "--max-attempts", "2",
        ])
        await worker.waitUntilReady()
        _ = try await TestDatabase.eventually(within: .seconds(15)) {
          if !worker.process.isRunning { return true }
          return try await settled()
        }
        if worker.process.isRunning {
          try await PostgresReplicaTests.stop([worker])
        } else {
          deaths += 1
        }
        // Behind the claimed head, whose worker died: a burst of its own.
        if round == 0 { try await queue.delay("k", for: .zero, value: ["next"]) }
      }
      let failures = try await queue.failures()
      print(
        "crash with a burst behind: \(deaths) worker deaths, kept: "
          + "\(failures.map { "\($0.value) after \($0.attempts) runs" })")
      #expect(failures.map(\.value) == [["poison-1", "poison-2"]])
      #expect(failures.first?.attempts == 2)
      #expect(failures.first?.lastError.contains("never ended") == true)
      #expect(deaths == 2)
      #expect(try await table.runs(finished: false) == 2)
      #expect(try await table.finishedElements()["k"] == ["next"])
      #expect(try await queue.pendingCount() == 0)
    }
  }

  @Test func backlogUnderAShortLeaseRunsNoBurstTwice() async throws {
    try await TestDatabase.withQueue("backlog", lease: .milliseconds(300)) { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let keys = 100_000
      try await client.query(
        """
        INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
        SELECT \(queue.name), 'k' || i, to_jsonb('v' || i), now(), now(), now()
        FROM generate_series(1, \(keys)) AS i
        """)
      let started = ContinuousClock.now
      let workers = try await PostgresReplicaTests.startWorkers(
        3, name: queue.name,
        ["--lease-ms", "300", "--concurrency", "32", "--record-batched"], record: false)
      #expect(try await queue.drains(within: .seconds(150), every: .seconds(1)))
      let elapsed = ContinuousClock.now - started
      try await PostgresReplicaTests.stop(workers)
      let runs = try await table.runs()
      let duplicates = try await table.keysRunMoreThanOnce()
      print(
        "backlog: \(keys) due keys, lease 300 ms, 3 workers: \(runs) runs in \(elapsed), "
          + "duplicate runs \(duplicates)")
      #expect(duplicates == 0)
      #expect(runs == keys)
    }
  }
}

extension RunTable {
  struct FencedRun: Sendable {
    var fence: Int64
    var applied: Bool?
    var cancelledAt: Double?
  }

  /// The runs of the fencing test, in claim order.
  func fencedRuns() async throws -> [FencedRun] {
    var runs: [FencedRun] = []
    let rows = try await client.query(
      """
      SELECT fence, fenced_write_applied, cancelled_at FROM dpd_test_runs
      WHERE name = \(name) ORDER BY fence
      """)
    for try await (fence, applied, cancelledAt) in rows.decode((Int64, Bool?, Double?).self) {
      runs.append(FencedRun(fence: fence, applied: applied, cancelledAt: cancelledAt))
    }
    return runs
  }

  /// The rows that `--transactional` runs wrote in their transactions and committed.
  func transactionalWrites() async throws -> [(fence: Int64, worker: String)] {
    var writes: [(fence: Int64, worker: String)] = []
    let rows = try await client.query(
      "SELECT fence, worker FROM dpd_test_tx_writes WHERE name = \(name) ORDER BY fence")
    for try await (fence, worker) in rows.decode((Int64, String).self) {
      writes.append((fence, worker))
    }
    return writes
  }

  /// The fence stored with the key's fenced write.
  func storedFence(_ key: String) async throws -> Int64? {
    let rows = try await client.query(
      "SELECT fence FROM dpd_test_fenced WHERE name = \(name) AND key = \(key)")
    for try await fence in rows.decode(Int64.self) { return fence }
    return nil
  }

  /// Keys that ran more than once.
  func keysRunMoreThanOnce() async throws -> Int {
    let rows = try await client.query(
      """
      SELECT count(*) FROM (SELECT key FROM dpd_test_runs WHERE name = \(name)
        GROUP BY key HAVING count(*) > 1) d
      """)
    for try await count in rows.decode(Int.self) { return count }
    return 0
  }
}
