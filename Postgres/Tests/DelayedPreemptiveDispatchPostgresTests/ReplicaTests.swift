import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Several replicas on one database: `dpd-postgres-test-worker` processes run the bursts and record
/// every run's start and end in `dpd_test_runs`; the checks are SQL over that table. Serialized:
/// each test loads the 2-core machine on its own.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresReplicaTests {
  /// Starts `count` workers on queue `name` and waits until each one runs.
  static func startWorkers(
    _ count: Int, name: String, _ flags: [String], record: Bool = true,
    url: String = TestDatabase.url
  ) async throws -> [WorkerProcess] {
    var workers: [WorkerProcess] = []
    let base = ["--name", name, "--quiet"] + (record ? ["--record"] : [])
    for _ in 0..<count {
      workers.append(try WorkerProcess(base + flags, url: url))
    }
    for worker in workers { await worker.waitUntilReady() }
    return workers
  }

  /// For the tests that count duplicate runs, with no outage: the worker's run records may take
  /// up to 20 s before its handler gives up on them (2 s by default, for the outage tests). A
  /// record given up on can still land: a `finished` that lands after its handler threw marks a
  /// run finished whose burst runs again, a duplicate of the test's making. With the whole group
  /// running beside this suite on 2 cores, one run in five saw 1 duplicate and 1 unfinished run
  /// of 12,120: the trace of a `finished` given up on that landed, and of a retried run whose
  /// `started` was given up on in turn.
  static let roomyRecords = ["--record-timeout-ms", "20000"]

  /// SIGTERM: each worker drains and exits 0.
  static func stop(_ workers: [WorkerProcess]) async throws {
    for worker in workers { worker.signal(SIGTERM) }
    for worker in workers {
      let exit = try await worker.waitForExit()
      #expect(exit?.status == 0 && exit?.reason == .exit, "worker: \(worker.errorText())")
    }
  }

  @Test func threeReplicasRunEveryBurstOnceWithoutOverlap() async throws {
    try await TestDatabase.withQueue("replicas") { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let workers = try await Self.startWorkers(
        3, name: queue.name, ["--concurrency", "8", "--handler-ms", "1"] + Self.roomyRecords)
      let keys = 10_000
      let started = ContinuousClock.now
      // 4 producers; each owns every 4th key, submits it twice (one burst), and comes back to
      // every 7th key later, while it may be running.
      let lastValues = try await withThrowingTaskGroup(of: [String: String].self) { group in
        for producer in 0..<4 {
          group.addTask {
            var last: [String: String] = [:]
            for index in stride(from: producer, to: keys, by: 4) {
              for round in 1...2 {
                let value = "\(index)-\(round)"
                try await queue.delay("k\(index)", for: .milliseconds(20), value: value)
                last["k\(index)"] = value
              }
            }
            for index in stride(from: producer, to: keys, by: 28) {
              try await queue.delay("k\(index)", for: .milliseconds(20), value: "\(index)-3")
              last["k\(index)"] = "\(index)-3"
            }
            return last
          }
        }
        return try await group.reduce(into: [:]) { $0.merge($1) { _, new in new } }
      }
      #expect(try await queue.drains(within: .seconds(90)))
      let elapsed = ContinuousClock.now - started
      try await Self.stop(workers)

      #expect(try await queue.pendingCount() == 0)
      let overlaps = try await table.overlaps()
      let duplicates = try await table.finishedDuplicates()
      let ran = try await table.lastValues()
      let lost = lastValues.filter { ran[$0.key] != $0.value }.count
      let runs = try await table.runs()
      print(
        "replicas: \(keys) keys, \(runs) runs in \(elapsed); overlaps \(overlaps), "
          + "duplicate runs \(duplicates), lost \(lost)")
      #expect(lastValues.count == keys)
      #expect(overlaps == 0)
      #expect(duplicates == 0)
      #expect(lost == 0)
      #expect(try await table.runs(finished: false) == 0)
    }
  }

  /// A queue of `[String]` with `merge: .append`, for the replicas started with `--append`.
  static func withAppendQueue(
    _ prefix: String,
    _ body:
      @Sendable (PostgresDelayedPreemptiveQueue<[String]>, PostgresClient) async throws -> Void
  ) async throws {
    try await TestDatabase.withClient { client, configuration in
      let queue = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName(prefix),
        merge: .append)
      try await queue.migrate()
      try await body(queue, client)
    }
  }

  /// The multi-replica run with `merge: .append`: every submission carries a value of its own,
  /// so a value lost or run twice anywhere shows up in the elements of the finished runs.
  @Test func threeReplicasWithAppendLoseNoValueAndRunNoneTwice() async throws {
    try await Self.withAppendQueue("replicas-append") { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let workers = try await Self.startWorkers(
        3, name: queue.name,
        ["--append", "--concurrency", "8", "--handler-ms", "1"] + Self.roomyRecords)
      let keys = 3_000
      let started = ContinuousClock.now
      // 4 producers; each owns every 4th key, submits it three times (one burst), and comes
      // back to every 7th key later, twice, while it may be running.
      let submitted = try await withThrowingTaskGroup(of: [String: [String]].self) { group in
        for producer in 0..<4 {
          group.addTask {
            var sent: [String: [String]] = [:]
            for index in stride(from: producer, to: keys, by: 4) {
              for round in 1...3 {
                let value = "\(index)-\(round)"
                try await queue.delay("k\(index)", for: .milliseconds(20), value: [value])
                sent["k\(index)", default: []].append(value)
              }
            }
            for index in stride(from: producer, to: keys, by: 28) {
              for round in 4...5 {
                let value = "\(index)-\(round)"
                try await queue.delay("k\(index)", for: .milliseconds(20), value: [value])
                sent["k\(index)", default: []].append(value)
              }
            }
            return sent
          }
        }
        return try await group.reduce(into: [:]) { $0.merge($1) { old, _ in old } }
      }
      #expect(try await queue.drains(within: .seconds(90)))
      let elapsed = ContinuousClock.now - started
      try await Self.stop(workers)

      let received = try await table.finishedElements()
      var seen: [String: Int] = [:]
      for elements in received.values { for element in elements { seen[element, default: 0] += 1 } }
      let values = submitted.values.flatMap { $0 }
      let lost = values.filter { seen[$0] == nil }.count
      let duplicated = seen.values.reduce(0) { $0 + max(0, $1 - 1) }
      let outOfOrder = submitted.filter { received[$0.key] != $0.value }.count
      let overlaps = try await table.overlaps()
      let runs = try await table.runs()
      print(
        "replicas with append: \(keys) keys, \(values.count) values in \(runs) runs in \(elapsed); "
          + "lost \(lost), duplicated \(duplicated), keys out of order \(outOfOrder), "
          + "overlaps \(overlaps)")
      let returning = (0..<4).map { Array(stride(from: $0, to: keys, by: 28)).count }
      #expect(values.count == keys * 3 + 2 * returning.reduce(0, +))
      #expect(lost == 0)
      #expect(duplicated == 0)
      #expect(outOfOrder == 0)
      #expect(overlaps == 0)
      #expect(runs < values.count)  // bursts merged their submissions
      #expect(try await table.runs(finished: false) == 0)
    }
  }

  /// A burst taken over after its replica died runs again with its own array: the submission
  /// made during its run is not merged into the re-run, and runs after it, alone.
  @Test func aTakenOverBurstWithAppendRunsAgainWithItsOwnArray() async throws {
    try await Self.withAppendQueue("takeover-append") { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let flags = ["--append", "--handler-ms", "2500", "--lease-ms", "3000"]
      let victim = try await Self.startWorkers(1, name: queue.name, flags)[0]
      // One burst: the second call comes well within the first's deadline (a minute, T7) on a
      // loaded machine too; `flush` then makes it due.
      try await queue.delay("t", for: .seconds(60), value: ["a"])
      try await queue.delay("t", for: .seconds(60), value: ["b"])
      #expect(try await queue.flush("t"))
      #expect(
        try await TestDatabase.eventually(within: .seconds(30)) {
          try await table.runs(finished: false) == 1
        })
      try await queue.delay("t", for: .zero, value: ["c"])
      victim.signal(SIGKILL)
      _ = try await victim.waitForExit()
      let survivor = try await Self.startWorkers(1, name: queue.name, flags)
      #expect(try await queue.drains(within: .seconds(60)))
      try await Self.stop(survivor)
      #expect(try await table.finishedElements()["t"] == ["a", "b", "c"])
      #expect(try await table.runs(finished: true) == 2)  // [a, b] again, then [c] alone
      #expect(try await table.overlaps() == 0)
    }
  }

  @Test func killedReplicasBurstsRunAgainElsewhereAfterTheLease() async throws {
    try await TestDatabase.withQueue("crash") { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      // A lease of 3 s renewed every second survives a loaded machine's stalls; a shorter one
      // can expire under a live replica, which then (rightly, at least once) runs it again.
      let flags = ["--concurrency", "8", "--handler-ms", "2500", "--lease-ms", "3000"]
      let victim = try await Self.startWorkers(1, name: queue.name, flags)[0]
      for index in 0..<8 { try await queue.delay("slow\(index)", for: .zero, value: "s\(index)") }
      let allRunning = try await TestDatabase.eventually(within: .seconds(30)) {
        try await table.runs(finished: false) == 8
      }
      let started = try await table.runs()
      #expect(allRunning, "the victim started \(started) runs, not the 8 it was given")
      victim.signal(SIGKILL)
      _ = try await victim.waitForExit()
      let killed = Date()

      let survivors = try await Self.startWorkers(2, name: queue.name, flags)
      for index in 0..<40 { try await queue.delay("other\(index)", for: .zero, value: "o\(index)") }
      #expect(try await queue.drains(within: .seconds(60)))
      try await Self.stop(survivors)

      let perKey = try await table.finishedRunsPerKey()
      let ran = try await table.lastValues()
      let reRuns = (0..<8).filter { perKey["slow\($0)"] == 1 }.count
      let lost =
        (0..<8).filter { ran["slow\($0)"] != "s\($0)" }.count
        + (0..<40).filter { ran["other\($0)"] != "o\($0)" }.count
      let overlaps = try await table.overlaps()
      print(
        "crash: killed 1 of 3 replicas with 8 bursts running; re-ran \(reRuns), lost \(lost), "
          + "overlaps \(overlaps)")
      #expect(reRuns == 8)
      #expect(lost == 0)
      #expect(overlaps == 0)
      #expect((0..<40).allSatisfy { perKey["other\($0)"] == 1 })
      #expect(try await table.runs(finished: false) == 8)  // the killed ones never finished
      #expect(Date().timeIntervalSince(killed) >= 3.0)
    }
  }

  @Test func eightProducersHammeringOneRunningKeyNeverRunItTwiceAtOnce() async throws {
    try await TestDatabase.withQueue("contention") { queue, client in
      try await RunTable.create(client)
      let table = RunTable(client: client, name: queue.name)
      let workers = try await Self.startWorkers(
        2, name: queue.name, ["--concurrency", "4", "--handler-ms", "50"] + Self.roomyRecords)
      try await withThrowingTaskGroup(of: Void.self) { group in
        for producer in 0..<8 {
          group.addTask {
            for index in 0..<150 {
              try await queue.delay(
                "hot", for: .milliseconds(index % 3), value: "p\(producer)-\(index)")
            }
          }
        }
        try await group.waitForAll()
      }
      try await queue.delay("hot", for: .zero, value: "final")
      #expect(try await queue.drains(within: .seconds(30)))
      try await Self.stop(workers)
      let runs = try await table.runs()
      let overlaps = try await table.overlaps()
      print("contention: 1200 submissions to one key, \(runs) runs, overlaps \(overlaps)")
      #expect(runs >= 2)
      #expect(overlaps == 0)
      #expect(try await table.finishedDuplicates() == 0)
      #expect(try await table.lastValues()["hot"] == "final")
    }
  }

  @Test func cancellingRunLetsRunningHandlersFinishAndClaimsNothingNew() async throws {
    try await TestDatabase.withQueue("shutdown") { queue, _ in
      let log = RunLog()
      let worker = Task {
        try await queue.run(concurrency: 3) { key, value in
          try await log.record(key, value) { try await Task.sleep(for: .milliseconds(500)) }
        }
      }
      for index in 0..<3 { try await queue.delay("now\(index)", for: .zero, value: "x") }
      for index in 0..<5 {
        try await queue.delay("later\(index)", for: .milliseconds(300), value: "y")
      }
      #expect(try await TestDatabase.eventually { await log.all.count == 3 })
      worker.cancel()
      try await worker.value
      let returned = Date()
      let runs = await log.all
      #expect(runs.count == 3)
      #expect(runs.allSatisfy { $0.finished != nil && $0.finished! <= returned })
      try await Task.sleep(for: .milliseconds(600))
      #expect(await log.all.count == 3)
      #expect(try await queue.pendingCount() == 5)
    }
  }
}
