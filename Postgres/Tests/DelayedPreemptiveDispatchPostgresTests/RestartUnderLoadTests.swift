import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P7 through outages while the machine is loaded: worker processes whose handlers write
/// their runs to the database, four producers submitting again and again to the same keys (so
/// that submissions land while their key runs or ends, and bursts wait in `later`), both cores
/// kept busy by two spinning processes, then a fresh worker joining after the outage. Every key
/// whose last `delay` returned must run with that value or a newer one, and no row may stay
/// pending once the queue has drained. Part of the serialized outage suite, so that no other
/// test restarts the fault server meanwhile.
///
/// Three outages, one test each: a `pg_ctl restart -m fast`; a `pg_ctl stop -m fast`, 3 s down,
/// then a start; and every process of the server stopped (SIGSTOP) for 8 s. The restart keeps the
/// load it always had (lease 3 s, handlers of 0 to 400 ms, delays of 0 to 300 ms, 108 keys); the
/// other two take the load of the check that found issue 38's losses (lease 10 s, handlers of 0
/// to 40 ms, delays of 0 to 400 ms, 104 keys).
///
/// `DPD_RESTART_RUNS` says how many times in a row each test runs (default 1, as in CI);
/// `DPD_RESTART_LEASE_MS` the restart's lease (default 3000); `DPD_RESTART_LOAD=outside` gives the
/// restart the other two's load; `DPD_RESTART_WARNINGS` prints the workers' warnings.
extension PostgresOutageTests {
  static let restartRuns = Int(ProcessInfo.processInfo.environment["DPD_RESTART_RUNS"] ?? "") ?? 1
  static let restartLeaseMilliseconds =
    Int(ProcessInfo.processInfo.environment["DPD_RESTART_LEASE_MS"] ?? "") ?? 3000

  /// What the server goes through while the producers and workers go on.
  enum LoadedOutage: String, Sendable {
    /// `pg_ctl restart -m fast`.
    case restart
    /// `pg_ctl stop -m fast`, 3 s down, then a start on the same port.
    case stopStart = "stop/start"
    /// Every process of the server stopped with SIGSTOP for 8 s, then continued.
    case pause

    func happen() async throws {
      switch self {
      case .restart:
        try await FaultServer.control("restart")
      case .stopStart:
        try await FaultServer.control("down")
        try await Task.sleep(for: .seconds(3))
        try await FaultServer.control("up")
      case .pause:
        try await FaultServer.control("pause")
        try await Task.sleep(for: .seconds(8))
        try await FaultServer.control("resume")
      }
    }
  }

  /// The load beside an outage.
  struct Load: Sendable {
    var leaseMilliseconds: Int
    var handlerMaxMilliseconds: Int
    var delayMaxMilliseconds: Int
    var keysPerProducer: Int
    /// How the handlers record their runs (the test worker's flags).
    var recording: [String] = []

    /// The restart's load; `DPD_RESTART_LOAD=outside` gives it ``outsideCheck``'s instead.
    static var restart: Load {
      if ProcessInfo.processInfo.environment["DPD_RESTART_LOAD"] == "outside" {
        return outsideCheck
      }
      return Load(
        leaseMilliseconds: restartLeaseMilliseconds, handlerMaxMilliseconds: 400,
        delayMaxMilliseconds: 300, keysPerProducer: 27)
    }
    /// The load of the check that found issue 38's losses: its handlers trust the driver's
    /// queries to end (no bound of their own) and try a failing write again for up to 10 s.
    static let outsideCheck = Load(
      leaseMilliseconds: 10_000, handlerMaxMilliseconds: 40, delayMaxMilliseconds: 400,
      keysPerProducer: 26, recording: ["--record-timeout-ms", "0", "--record-retry-ms", "10000"])
    /// The partition's: a lease of 2 s, so that twice and ten times the lease are 4 s and 20 s;
    /// records bounded by 2 s (the default), so that a partitioned worker's handler throws
    /// rather than waits, as a handler whose writes have a timeout would.
    static let partition = Load(
      leaseMilliseconds: 2000, handlerMaxMilliseconds: 400, delayMaxMilliseconds: 300,
      keysPerProducer: 26)
  }

  struct RestartOutcome: Sendable, CustomStringConvertible {
    var acknowledged = 0
    var keys = 0
    var lost: [String] = []
    var stranded: [String] = []
    var pending: [String] = []
    var failures = 0
    var alive = 0
    var drained: Duration?
    var errors: [String] = []
    /// Pairs of finished runs of one key that overlapped (P3; none expected within the lease).
    var overlaps = 0
    /// Failovers only: from the moment the service's name points at the writable primary to
    /// the first handler any worker started after it.
    var switchToFirstClaim: Duration?
    /// Failovers only: whether the fence of every run whose handler started after the switch is
    /// greater than the fence of every run whose handler started before the primary died.
    var fencesOrdered: Bool?
    /// Clock jumps only: how many of the 20 sentinel bursts ran, and how many of those started
    /// before they were due by the database's clock.
    var sentinelsRan: Int?
    var earlyRuns: Int?
    /// Clock jumps only: the first worker's (the one whose clock jumps) log lines of a lost lease.
    var firstWorkerLeasesLost: Int?
    /// Clock jumps only: the least and the greatest difference, in seconds, between the first
    /// worker's wall clock and the database's at its handlers' starts.
    var firstWorkerClockSkew: (least: Double, greatest: Double)?
    /// Partitions only: from the heal to the first handler the partitioned worker started.
    var healToFirstClaim: Duration?
    /// Partitions only: fenced writes applied over a greater fence (``RunTable/staleWritesApplied()``).
    var staleWritesApplied: Int?

    var description: String {
      "acknowledged \(acknowledged) delays over \(keys) keys, lost \(lost.count) \(lost), "
        + "pending after the drain \(pending.count), stranded claims \(stranded.count) "
        + "\(stranded), kept failures \(failures), workers alive \(alive) of 3, drained in "
        + "\(drained.map { "\($0)" } ?? "never"), overlapping runs \(overlaps)"
        + (switchToFirstClaim.map { ", first claim \($0) after the switch" } ?? "")
        + (fencesOrdered.map { ", fences ordered across the failover: \($0)" } ?? "")
        + (healToFirstClaim.map { ", the partitioned worker's first claim \($0) after the heal" }
          ?? "")
        + (staleWritesApplied.map { ", stale writes applied \($0)" } ?? "")
        + (sentinelsRan.map { ", sentinel bursts run \($0) of 20" } ?? "")
        + (earlyRuns.map { ", run early \($0)" } ?? "")
        + (firstWorkerLeasesLost.map { ", leases lost by the jumping worker \($0)" } ?? "")
        + (firstWorkerClockSkew.map {
          ", its clock from \(Int($0.least)) s to \(Int($0.greatest)) s off the database's"
        } ?? "")
    }
  }

  @Test func restartUnderLoadLosesNoAcknowledgedSubmission() async throws {
    try await expectNoLoss(through: .restart, load: .restart)
  }

  @Test func stopAndStartUnderLoadLosesNoAcknowledgedSubmission() async throws {
    try await expectNoLoss(through: .stopStart, load: .outsideCheck)
  }

  @Test func pausedServerUnderLoadLosesNoAcknowledgedSubmission() async throws {
    try await expectNoLoss(through: .pause, load: .outsideCheck)
  }

  func expectNoLoss(through outage: LoadedOutage, load: Load) async throws {
    var outcomes: [RestartOutcome] = []
    for run in 1...Self.restartRuns {
      let outcome = try await outageOnce(outage, load: load)
      print("\(outage.rawValue) under load, run \(run) of \(Self.restartRuns): \(outcome)")
      for line in outcome.errors.prefix(20) { print("  worker log: \(line)") }
      outcomes.append(outcome)
    }
    let clean = outcomes.filter { $0.lost.isEmpty && $0.pending.isEmpty }.count
    print("\(outage.rawValue) under load: \(clean) of \(outcomes.count) runs lost nothing")
    for outcome in outcomes { outcome.expectNothingLost() }
  }

  func outageOnce(_ outage: LoadedOutage, load: Load) async throws -> RestartOutcome {
    try await Self.underLoad(load: load, url: FaultServer.url) {
      try await outage.happen()
      return nil
    }
  }

  /// The instants of a failover, in seconds of this machine's `CLOCK_MONOTONIC`
  /// (`monotonicSeconds()`), which the test workers record their handlers' starts in: a run's
  /// recorded `started` is when its record was written, which a record retried through the
  /// outage can move past the switch.
  struct FailoverInstants: Sendable {
    /// Just before the primary was killed.
    var crashed: Double
    /// Just after the service's name pointed at the writable primary.
    var switched: Double
  }

  /// Producers and three worker processes (the third joins after `happen`) on the database at
  /// `url`, through `happen`, then the checker: every acknowledged `delay` ran with its value or
  /// a newer one. `happen` returns the instants of a failover (nil for an outage of one
  /// server). The checker reads through
  /// `checkerURL`'s URL when it gives one, once `happen` returned (a failover's new primary, directly: a connection through the
  /// service's name could still reach a node left behind), else through `url`.
  static func underLoad(
    load: Load, url: String, checkerURL: @escaping @Sendable () throws -> String? = { nil },
    partitionedURL: String? = nil, firstWorkerEnvironment: [String: String] = [:],
    sentinelDelay: Duration? = nil,
    happen: @escaping @Sendable () async throws -> FailoverInstants?
  ) async throws -> RestartOutcome {
    try await TestDatabase.withQueue(
      "outage-load", lease: .milliseconds(load.leaseMilliseconds), maxAttempts: 50, url: url
    ) { queue, client in
      var queue = queue
      queue.connectionTimeout = .seconds(4)
      try await RunTable.create(client)
      let logs = FileManager.default.temporaryDirectory.appendingPathComponent(queue.name)
      try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
      // The workers' logs are removed afterwards, unless DPD_KEEP_LOGS is set (to read them).
      defer {
        if ProcessInfo.processInfo.environment["DPD_KEEP_LOGS"] == nil {
          try? FileManager.default.removeItem(at: logs)
        }
      }
      let flags =
        [
          "--concurrency", "4", "--lease-ms", "\(load.leaseMilliseconds)", "--max-attempts", "50",
          "--retry-backoff-ms", "100", "--handler-max-ms", "\(load.handlerMaxMilliseconds)",
          "--log-level", "info",
        ] + load.recording
      var workers: [WorkerProcess] = []
      for index in 0..<2 {
        let partitioned = index == 0 && partitionedURL != nil
        workers.append(
          try WorkerProcess(
            ["--name", queue.name, "--quiet", "--record"] + flags
              + (partitionedURL != nil ? ["--fenced"] : []),
            url: partitioned ? partitionedURL ?? url : url,
            errorFile: logs.appendingPathComponent("worker-\(index).log"),
            environment: index == 0 ? firstWorkerEnvironment : [:]))
      }
      for worker in workers { await worker.waitUntilReady() }
      let spinners = try (0..<2).map { _ in try Spinner() }
      defer { for spinner in spinners { spinner.stop() } }

      let producers = ProducerLog()
      let stop = Flag()
      let producing = Task { [queue] in
        await withTaskGroup(of: Void.self) { group in
          for producer in 0..<4 {
            group.addTask {
              var sequence: [String: Int] = [:]
              while !stop.isSet {
                let key = "key-p\(producer)-\(Int.random(in: 0..<load.keysPerProducer))"
                let value = sequence[key, default: 0] + 1
                sequence[key] = value
                do {
                  try await queue.delay(
                    key, for: .milliseconds(Int.random(in: 0...load.delayMaxMilliseconds)),
                    value: "\(value)")
                  await producers.acknowledged(key, value)
                } catch {
                  await producers.failed(key, error)
                }
                try? await Task.sleep(for: .milliseconds(Int.random(in: 5...25)))
              }
            }
          }
        }
      }
      try await Task.sleep(for: .seconds(4))
      // Bursts that must not run before `sentinelDelay` has passed on the database's clock.
      var sentinelsSubmitted: Date?
      if let sentinelDelay {
        sentinelsSubmitted = try await RunTable.databaseNow(client)
        for index in 0..<20 {
          try await queue.delay("sentinel-\(index)", for: sentinelDelay, value: "1")
        }
      }
      let switched = try await happen()
      try await Task.sleep(for: .seconds(3))
      workers.append(
        try WorkerProcess(
          ["--name", queue.name, "--quiet", "--record"] + flags
            + (partitionedURL != nil ? ["--fenced"] : []), url: url,
          errorFile: logs.appendingPathComponent("worker-2.log")))
      await workers[2].waitUntilReady()
      try await Task.sleep(for: .seconds(2))
      stop.set()
      await producing.value

      let (checking, name) = (try checkerURL() ?? url, queue.name)
      let started = workers
      let sentinels = sentinelsSubmitted.flatMap { submitted in
        sentinelDelay.map { (submitted, $0) }
      }
      return try await TestDatabase.withClient(url: checking) { checker, configuration in
        var checked = PostgresDelayedPreemptiveQueue<String>(
          client: checker, configuration: configuration, name: name)
        checked.connectionTimeout = .seconds(4)
        let checkedTable = RunTable(client: checker, name: name)
        return try await Self.check(
          queue: checked, table: checkedTable, client: checker, workers: started,
          spinners: spinners, producers: producers, logs: logs, switched: switched,
          partitioned: partitionedURL != nil,
          sentinels: sentinels)
      }
    }
  }

  /// The checker of ``underLoad(load:url:checkerURL:happen:)``, once the producers stopped.
  private static func check(
    queue: PostgresDelayedPreemptiveQueue<String>, table: RunTable, client: PostgresClient,
    workers: [WorkerProcess], spinners: [Spinner], producers: ProducerLog, logs: URL,
    switched: FailoverInstants?, partitioned: Bool, sentinels: (Date, Duration)?
  ) async throws -> RestartOutcome {
    do {  // one scope, as the test's closure was
      var outcome = RestartOutcome()
      let drainStart = ContinuousClock.now
      if try await queue.drains(within: .seconds(45), every: .milliseconds(250)) {
        outcome.drained = ContinuousClock.now - drainStart
      }
      outcome.alive = workers.filter(\.process.isRunning).count
      outcome.stranded = try await RunTable.claimedKeys(queue.name, client: client)
      outcome.pending = try await RunTable.pendingKeys(queue.name, client: client)
      let rows = try await RunTable.rows(queue.name, client: client)
      try await PostgresReplicaTests.stop(workers)
      for spinner in spinners { spinner.stop() }

      let lastAcknowledged = await producers.lastAcknowledged
      let newestRun = try await table.newestRunValues()
      outcome.acknowledged = await producers.count
      outcome.keys = lastAcknowledged.count
      outcome.lost = lastAcknowledged.filter { key, value in (newestRun[key] ?? 0) < value }
        .map(\.key).sorted()
      outcome.failures = try await queue.failures().count
      outcome.overlaps = try await table.overlaps(byHandlerTimes: partitioned)
      if let switched {
        let (first, ordered) = try await table.failover(at: switched)
        outcome.switchToFirstClaim = first
        outcome.fencesOrdered = ordered
        if partitioned {
          outcome.healToFirstClaim = try await table.firstStart(
            by: "\(workers[0].process.processIdentifier)", after: switched.switched)
          outcome.staleWritesApplied = try await table.staleWritesApplied()
        }
      }
      let logText = (0..<3).map { index in
        (try? String(
          contentsOf: logs.appendingPathComponent("worker-\(index).log"), encoding: .utf8)) ?? ""
      }
      if let (submitted, delay) = sentinels {
        let due = submitted.addingTimeInterval(Double(delay.components.seconds))
        (outcome.sentinelsRan, outcome.earlyRuns) = try await table.sentinelRuns(due: due)
        outcome.firstWorkerLeasesLost =
          logText[0].split(separator: "\n").filter { $0.contains("lease lost") }.count
        outcome.firstWorkerClockSkew = try await table.wallClockSkew(
          of: "\(workers[0].process.processIdentifier)")
        if outcome.firstWorkerClockSkew == nil {
          print("the jumping worker ran nothing; its log:\n\(logText[0].suffix(6000))")
        }
      }
      for (index, text) in logText.enumerated() {
        outcome.errors += text.split(separator: "\n").filter { $0.contains(" error ") }
          .map { "worker \(index): \($0)" }
      }
      if ProcessInfo.processInfo.environment["DPD_RESTART_WARNINGS"] != nil {
        for (index, text) in logText.enumerated() {
          for line in text.split(separator: "\n") where line.contains(" warning ") {
            print("worker \(index): \(line.prefix(400))")
          }
        }
      }
      if !outcome.lost.isEmpty || !outcome.pending.isEmpty {
        print("rows left: \(rows)")
        for key in outcome.lost {
          print(
            "lost \(key): last acknowledged \(lastAcknowledged[key] ?? 0), newest run "
              + "\(newestRun[key] ?? 0); runs \(try await table.runs(of: key))")
        }
        for (index, text) in logText.enumerated() {
          print("worker \(index) log:\n\(text.suffix(6000))")
        }
        print("producer failures: \(await producers.failures.prefix(20))")
      }
      return outcome
    }
  }
}

extension PostgresOutageTests.RestartOutcome {
  /// What every scenario under load checks: no acknowledged submission lost, no key left
  /// pending or claimed after the drain, no kept failure, all three workers alive, the queue
  /// drained, and no error-level line in the workers' logs.
  func expectNothingLost(sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(lost.isEmpty, sourceLocation: sourceLocation)
    #expect(pending.isEmpty, sourceLocation: sourceLocation)
    #expect(stranded.isEmpty, sourceLocation: sourceLocation)
    #expect(failures == 0, sourceLocation: sourceLocation)
    #expect(alive == 3, sourceLocation: sourceLocation)
    #expect(drained != nil, sourceLocation: sourceLocation)
    #expect(
      errors.isEmpty, "error-level log lines: \(errors.prefix(5))", sourceLocation: sourceLocation)
  }
}

/// What the producers of the restart test saw.
actor ProducerLog {
  private(set) var lastAcknowledged: [String: Int] = [:]
  private(set) var count = 0
  private(set) var failures: [String] = []

  func acknowledged(_ key: String, _ value: Int) {
    lastAcknowledged[key] = max(lastAcknowledged[key] ?? 0, value)
    count += 1
  }

  func failed(_ key: String, _ error: any Error) {
    failures.append("\(key): \(error)")
  }
}

/// A process that keeps one core busy until stopped.
final class Spinner: Sendable {
  let process: Process

  init() throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "while :; do :; done"]
    try process.run()
  }

  func stop() {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }

  deinit { stop() }
}

extension RunTable {
  /// Keys whose row still holds a claim.
  static func claimedKeys(_ name: String, client: PostgresClient) async throws -> [String] {
    try await keys(name, where: "claim IS NOT NULL", client: client)
  }

  /// Keys whose row still holds work (a burst that waits or runs).
  static func pendingKeys(_ name: String, client: PostgresClient) async throws -> [String] {
    try await keys(name, where: "NOT idle AND NOT failed", client: client)
  }

  /// The keys of the queue's rows that meet `condition` (SQL written by the tests), in order.
  private static func keys(_ name: String, where condition: String, client: PostgresClient)
    async throws -> [String]
  {
    var bindings = PostgresBindings()
    bindings.append(name)
    let query = PostgresQuery(
      unsafeSQL: "SELECT key FROM dpd_bursts WHERE name = $1 AND \(condition) ORDER BY key",
      binds: bindings)
    var keys: [String] = []
    for try await key in try await client.query(query).decode(String.self) { keys.append(key) }
    return keys
  }

  /// Every column of the rows left, as text, to diagnose a failure.
  static func rows(_ name: String, client: PostgresClient) async throws -> [String] {
    var found: [String] = []
    let rows = try await client.query(
      """
      SELECT row_to_json(b)::text || ' now ' || clock_timestamp()::text
      FROM dpd_bursts AS b WHERE name = \(name)
      """)
    for try await row in rows.decode(String.self) { found.append(row) }
    return found
  }

  /// A key's recorded runs, in order of their start, as text, to diagnose a failure.
  func runs(of key: String) async throws -> [String] {
    var found: [String] = []
    let rows = try await client.query(
      """
      SELECT value || ' by ' || worker || ' fence ' || fence || ' attempt '
        || coalesce(attempt::text, '?') || ' started ' || started::text
        || ' finished ' || coalesce(finished::text, 'never')
      FROM dpd_test_runs WHERE name = \(name) AND key = \(key) ORDER BY started
      """)
    for try await row in rows.decode(String.self) { found.append(row) }
    return found
  }

  /// After a failover: from the switch to the first handler started after it (nil: none), and
  /// whether every fence of a run whose handler started after the switch is greater than every
  /// fence of a run whose handler started before the crash (handler starts on
  /// `CLOCK_MONOTONIC`, as the test workers record them).
  func failover(at instants: PostgresOutageTests.FailoverInstants) async throws -> (
    Duration?, Bool
  ) {
    let (crashed, switched) = (instants.crashed, instants.switched)
    let rows = try await client.query(
      """
      SELECT min(monotonic) FILTER (WHERE monotonic >= \(switched)) - \(switched)::float8,
        coalesce(max(fence) FILTER (WHERE monotonic < \(crashed)), 0)
          < coalesce(min(fence) FILTER (WHERE monotonic >= \(switched)), 9223372036854775807)
      FROM dpd_test_runs WHERE name = \(name)
      """)
    for try await (first, ordered) in rows.decode((Double?, Bool).self) {
      return (first.map { .milliseconds($0 * 1000) }, ordered)
    }
    return (nil, true)
  }

  /// The database's clock now.
  static func databaseNow(_ client: PostgresClient) async throws -> Date {
    for try await now in try await client.query("SELECT clock_timestamp()").decode(Date.self) {
      return now
    }
    throw RunTableError.noRow
  }

  /// How many sentinel bursts (keys `sentinel-…`) ran, and how many of them started before
  /// `due` by the database's clock.
  func sentinelRuns(due: Date) async throws -> (ran: Int, early: Int) {
    let rows = try await client.query(
      """
      SELECT count(DISTINCT key)::int8, count(*) FILTER (WHERE started < \(due))::int8
      FROM dpd_test_runs WHERE name = \(name) AND key LIKE 'sentinel-%'
      """)
    for try await (ran, early) in rows.decode((Int, Int).self) { return (ran, early) }
    return (0, 0)
  }

  /// The least and the greatest difference, in seconds, between `worker`'s wall clock and the
  /// database's at its handlers' starts; nil when it recorded none.
  func wallClockSkew(of worker: String) async throws -> (least: Double, greatest: Double)? {
    let rows = try await client.query(
      """
      SELECT min(wall - extract(epoch FROM started)::float8),
        max(wall - extract(epoch FROM started)::float8)
      FROM dpd_test_runs WHERE name = \(name) AND worker = \(worker)
      """)
    for try await (least, greatest) in rows.decode((Double?, Double?).self) {
      guard let least, let greatest else { return nil }
      return (least, greatest)
    }
    return nil
  }

  enum RunTableError: Error { case noRow }

  /// From `instant` (`CLOCK_MONOTONIC`) to the first handler that `worker` (a process id)
  /// started after it; nil when it started none.
  func firstStart(by worker: String, after instant: Double) async throws -> Duration? {
    let rows = try await client.query(
      """
      SELECT min(monotonic) - \(instant)::float8 FROM dpd_test_runs
      WHERE name = \(name) AND worker = \(worker) AND monotonic >= \(instant)
      """)
    for try await first in rows.decode(Double?.self) {
      return first.map { .milliseconds($0 * 1000) }
    }
    return nil
  }

  /// Each key's newest value (values are increasing numbers per key) among its finished runs.
  func newestRunValues() async throws -> [String: Int] {
    var values: [String: Int] = [:]
    let rows = try await client.query(
      """
      SELECT key, max(value::int8) FROM dpd_test_runs
      WHERE name = \(name) AND finished IS NOT NULL GROUP BY key
      """)
    for try await (key, value) in rows.decode((String, Int).self) { values[key] = value }
    return values
  }
}
