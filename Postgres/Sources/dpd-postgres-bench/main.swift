// dpd-postgres-bench: the PostgreSQL package's figures, measured against a real server. Each
// figure is one JSON line on stdout (scripts/postgres-report.py turns the lines of three runs
// into BENCHMARKS.md); progress goes to stderr.
//
//   swift build -c release --package-path Postgres
//   DPD_POSTGRES_URL=$(scripts/postgres.sh start) Postgres/.build/release/dpd-postgres-bench
//   Postgres/.build/release/dpd-postgres-bench --pgbench-script NAME   # prints pgbench's script
//
// 0. client floor: 1 and 8 producers sending `SELECT 1` through `PostgresClient`, each awaiting
//    its calls one after another: what `delay` from as many producers compares with; and the
//    statement floor: the same producers sending `delay`'s own statement by hand (a call of
//    `dpd_submit` with one submission, prepared, through `PostgresClient.execute`): what the
//    database's work for one submission adds to the client's round trip; and the write floor:
//    the same producers sending the plainest write of a submission's row, a prepared one-row
//    INSERT into `bench_write_floor` (a copy of `dpd_bursts` with its indexes and rows), without
//    any rule: the least that any submission that keeps its row in this table costs; and the
//    cheapest client floor: 1 producer sending a prepared `SELECT 1` on a connection held
//    outside the pool (SingleCall), the least a call through postgres-nio costs.
// 1. submit: `delay` from 1, 8, 64 and 256 concurrent producers, each awaiting its calls one
//    after another for a fixed time; distinct keys, and a hot mix (every tenth call goes to one
//    of 100 hot keys, the rest are distinct).
// 2. drain: 10^5 keys due at once, run by 3 worker processes (this program with `--worker`, a
//    handler that only counts, as pgqueuer's in scripts/postgres-peers) (runs/s), with
//    the rates of the first and the last tenth of the backlog; and the drain floor before it,
//    on the same rows: 3 connections claiming and ending due rows by hand (DrainFloor); then the
//    same for 10^6 keys (the part `drain-large`).
// 3. lateness: deadline to handler start, one worker, 300 keys with 20 ms delays, on an idle
//    queue and while 64 producers submit.
// 4. transaction: one producer, each call a transaction of one submission
//    (`PostgresClient.withTransaction`): `delay(on:)` against the same statement sent by hand.
// 5. single (only when DPD_BENCH_PARTS names it): one producer's `delay` beside five ways of
//    sending `SELECT 1`, interleaved over 5 rounds (SingleCall).
// scripts/postgres-bench.sh runs this on a fresh server, then pgbench with `delay`'s statement
// and the peers, three times.
import DelayedPreemptiveDispatchPostgres
import Foundation
import PostgresNIO

/// What every point starts from, ours and pgbench's: the table of a service that has been
/// running for a while, with 10^5 pending keys of another queue and statistics taken. An empty
/// table with fresh statistics would be a trap: a connection that prepares a statement then
/// caches a plan that scans the whole table, and keeps it while the table grows, until an
/// automatic ANALYZE happens to replace it (in a trial, pgbench with 8 clients measured 2,964 and
/// 13,405 transactions/s in two runs of that).
let resetStatements = [
  "TRUNCATE dpd_bursts",
  """
  INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
  SELECT 'bench-ballast', 'b' || i, '1'::jsonb, d.t, d.t, d.t
  FROM generate_series(1, 100000) AS i, (SELECT clock_timestamp() + interval '1 day' AS t) AS d
  """,
  "VACUUM ANALYZE dpd_bursts",
]

/// The write floor's table (see 0. above): a copy of `dpd_bursts` with its indexes, starting
/// from the same rows, made before each write floor point and dropped after it.
let writeFloorStatements = [
  "DROP TABLE IF EXISTS bench_write_floor",
  "CREATE TABLE bench_write_floor (LIKE dpd_bursts INCLUDING ALL)",
  "INSERT INTO bench_write_floor SELECT * FROM dpd_bursts",
  "VACUUM ANALYZE bench_write_floor",
]

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--pgbench-script", arguments.count == 2 {
  print(BenchmarkStatements.pgbenchScript(name: arguments[1]), terminator: "")
  exit(0)
}
// The drain's statements as the package sends them, and the drain floor's, for a profile of the
// server's side (EXPLAIN, or callgrind on a backend: scripts/postgres-instructions.sh --drain).
if arguments.first == "--statement", arguments.count == 2,
  let text = [
    "claim": StatementText.claim, "succeeded": StatementText.succeeded,
    "floor-claim": DrainFloor.Claim.sql, "floor-end": DrainFloor.End.sql,
  ][arguments[1]]
{
  print(text)
  exit(0)
}
if arguments.first == "--reset-sql", arguments.count == 1 {
  print(resetStatements.map { $0 + ";" }.joined(separator: "\n"))
  exit(0)
}
// The write floor for scripts/postgres-instructions.sh: the statements that make its table, and
// its INSERT as a pgbench script (a fresh key per transaction in `:k`).
if arguments.first == "--write-floor-sql", arguments.count == 1 {
  print(writeFloorStatements.map { $0 + ";" }.joined(separator: "\n"))
  exit(0)
}
if arguments.first == "--pgbench-write-floor", arguments.count == 1 {
  let insert = PlainWrite.sql.replacingOccurrences(of: "$1", with: "'k' || :k")
  print("\\set k random(1, 1000000000)\n" + insert + ";")
  exit(0)
}

guard let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"], !url.isEmpty else {
  FileHandle.standardError.write(
    Data("set DPD_POSTGRES_URL (scripts/postgres.sh start prints one)\n".utf8))
  exit(2)
}
/// How long each submission point runs, in seconds (DPD_BENCH_SECONDS; default 5).
let pointSeconds = Double(ProcessInfo.processInfo.environment["DPD_BENCH_SECONDS"] ?? "") ?? 5
/// The producer counts of the submission points (DPD_BENCH_PRODUCERS; default 1,8,64,256).
let producerCounts = (ProcessInfo.processInfo.environment["DPD_BENCH_PRODUCERS"] ?? "1,8,64,256")
  .split(separator: ",").compactMap { Int($0) }
/// Which parts run (DPD_BENCH_PARTS, comma-separated; default all of them).
let parts = Set(
  (ProcessInfo.processInfo.environment["DPD_BENCH_PARTS"]
    ?? "floor,submit,drain,drain-large,lateness,transaction")
    .split(separator: ",").map(String.init))

/// A logger that discards every line, for the calls sent by hand. (Defined before the parts: a
/// global of this file exists once the top-level code has reached it.)
let silentLogger = PostgresDelayedPreemptiveQueue<Double>.silentLogger
let configuration = try PostgresURL.configuration(url)
let client = PostgresClient(configuration: configuration)
let clientRun = Task { await client.run() }

// A worker process of the drain (`--worker NAME CONCURRENCY`): see BenchWorker.
if arguments.first == "--worker", arguments.count == 3, let concurrency = Int(arguments[2]) {
  try await BenchWorker.run(
    client: client, configuration: configuration, name: arguments[1], concurrency: concurrency)
  exit(0)
}

@Sendable func progress(_ line: String) {
  FileHandle.standardError.write(Data("dpd-postgres-bench: \(line)\n".utf8))
}

/// One figure, one JSON line on stdout.
struct Figure: Encodable {
  var contender = "DelayedPreemptiveDispatchPostgres"
  var figure: String
  var mix: String?
  var producers: Int?
  var workers: Int?
  var jobs: Int?
  var value: Double
  var unit: String
  var p50: Double?
  var p99: Double?
  var max: Double?
  var samples: Int?
  var note: String?
}

func emit(_ figure: Figure) {
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.sortedKeys]
  let data = try! encoder.encode(figure)
  FileHandle.standardOutput.write(data + Data("\n".utf8))
}

func queue(_ name: String) -> PostgresDelayedPreemptiveQueue<Double> {
  PostgresDelayedPreemptiveQueue<Double>(client: client, configuration: configuration, name: name)
}

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `producers` tasks that each call `body` one call after another until `pointSeconds`
/// have passed; returns the calls per second.
func rate(producers: Int, _ body: @escaping @Sendable (Int, Int) async throws -> Void) async throws
  -> Double
{
  let start = ContinuousClock.now
  let end = start + .seconds(pointSeconds)
  let calls = try await withThrowingTaskGroup(of: Int.self) { group in
    for producer in 0..<producers {
      group.addTask {
        var index = 0
        while ContinuousClock.now < end {
          try await body(producer, index)
          index += 1
        }
        return index
      }
    }
    return try await group.reduce(0, +)
  }
  let elapsed = seconds(ContinuousClock.now - start)
  return Double(calls) / elapsed
}

func reset() async throws {
  for statement in resetStatements {
    _ = try await client.query(PostgresQuery(unsafeSQL: statement))
  }
}

try await queue("bench-migrate").migrate()
try await reset()

// 0. the client's floor
if parts.contains("floor") {
  for producers in [1, 8] {
    let floor = try await rate(producers: producers) { _, _ in
      try await client.query("SELECT 1")
    }
    progress(String(format: "client floor %d producers: %.0f/s", producers, floor))
    emit(Figure(figure: "floor", producers: producers, value: floor, unit: "/s"))
  }
  let cheapest = try await SingleCall.heldConnection(configuration)
  let cheapestFloor = try await rate(producers: 1) { _, _ in
    try await SingleCall.run(.heldPrepared, client: client, connection: cheapest)
  }
  try await cheapest.close().get()
  progress(String(format: "cheapest client floor 1 producer: %.0f/s", cheapestFloor))
  emit(
    Figure(
      figure: "cheapest-floor", producers: 1, value: cheapestFloor, unit: "/s",
      note: SingleCall.Way.heldPrepared.note))
  for producers in [1, 8] {
    let floor = try await rate(producers: producers) { producer, index in
      try await submitByHand(HandSentSubmission(key: "s\(producer)-\(index)"))
    }
    progress(String(format: "statement floor %d producers: %.0f/s", producers, floor))
    emit(
      Figure(
        figure: "statement-floor", producers: producers, value: floor, unit: "/s",
        note: "dpd_submit with one submission, prepared, sent by hand through PostgresClient"))
    try await reset()
  }
  for producers in [1, 8] {
    for statement in writeFloorStatements {
      _ = try await client.query(PostgresQuery(unsafeSQL: statement))
    }
    let floor = try await rate(producers: producers) { producer, index in
      for try await _ in try await client.execute(
        PlainWrite(key: "w\(producer)-\(index)"), logger: silentLogger)
      {}
    }
    progress(String(format: "write floor %d producers: %.0f/s", producers, floor))
    emit(
      Figure(
        figure: "write-floor", producers: producers, value: floor, unit: "/s",
        note: "a prepared one-row INSERT into a copy of dpd_bursts, no rule"))
    _ = try await client.query("DROP TABLE bench_write_floor")
  }
}

// 5. single: one producer's `delay` beside the ways of sending `SELECT 1` (SingleCall), one
// point of each in every round, 5 rounds, so that the machine's drift reaches every way alike.
// Not one of the default parts: its figures are for BENCHMARKS.md's account of item 5 of
// issue 42, the report's floors are part 0.
if parts.contains("single") {
  let held = try await SingleCall.heldConnection(configuration)
  let singleQueue = queue("bench-single")
  for round in 1...5 {
    for way in SingleCall.Way.allCases {
      let value = try await rate(producers: 1) { _, index in
        switch way {
        case .delay:
          try await singleQueue.delay("r\(round)-\(index)", for: .seconds(3600), value: 1)
        default: try await SingleCall.run(way, client: client, connection: held)
        }
      }
      progress(String(format: "single round %d, %@: %.0f/s", round, way.rawValue, value))
      emit(
        Figure(
          figure: "single", mix: way.rawValue, producers: 1, value: value, unit: "/s",
          samples: round, note: way.note))
    }
    // The inline way: the same call as `pool`, from this task itself instead of a child.
    let start = ContinuousClock.now
    let end = start + .seconds(pointSeconds)
    var calls = 0
    while ContinuousClock.now < end {
      try await client.query("SELECT 1")
      calls += 1
    }
    let inline = Double(calls) / seconds(ContinuousClock.now - start)
    progress(String(format: "single round %d, pool-inline: %.0f/s", round, inline))
    emit(
      Figure(
        figure: "single", mix: "pool-inline", producers: 1, value: inline, unit: "/s",
        samples: round,
        note: "as pool, from the bench's top-level task, not a child task of a group"))
    try await reset()
  }
  try await held.close().get()
}

// 1. submissions
if parts.contains("submit") {
  for mix in ["distinct", "hot"] {
    for producers in producerCounts {
      let submitQueue = queue("bench-submit")
      let rate = try await rate(producers: producers) { producer, index in
        let key =
          mix == "hot" && index % 10 == 0
          ? "hot-\((producer + index / 10) % 100)" : "p\(producer)-\(index)"
        try await submitQueue.delay(key, for: .seconds(3600), value: 1)
      }
      progress(String(format: "submit %@ %d producers: %.0f/s", mix, producers, rate))
      emit(Figure(figure: "submit", mix: mix, producers: producers, value: rate, unit: "/s"))
      try await reset()
    }
  }
}

// 2. drain: N keys due at once, run by 3 worker processes; before it, the drain floor on the
// same rows (see DrainFloor). N is 10^5 (the part `drain`) and 10^6 (`drain-large`). The runs are
// counted from the workers' own output (a count every 10 ms, through a pipe), so that the server
// being measured is never polled; the rates of the first and the last tenth of the backlog show
// a plan or a table that slows down as the drain goes on.
if parts.contains("drain") || parts.contains("drain-large") {
  let drainName = "bench-drain"
  let workerCount = 3
  let workerConcurrency = 32
  let sizes =
    (parts.contains("drain") ? [100_000] : []) + (parts.contains("drain-large") ? [1_000_000] : [])
  /// Inserts `count` rows of the drain's queue due at `delay` from now on the database's clock,
  /// and takes statistics; returns that instant (seconds since 1970).
  func insertDue(_ count: Int, in delay: Int) async throws -> Double {
    let inserted = try await client.query(
      """
      WITH d AS (SELECT clock_timestamp() + \(delay) * interval '1 second' AS t), rows AS (
        INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
        SELECT \(drainName), 'k' || i, '"x"'::jsonb, d.t, d.t, d.t
        FROM generate_series(1, \(count)) AS i, d
      )
      SELECT extract(epoch FROM t)::float8 FROM d
      """
    ).decode(Double.self)
    var due = 0.0
    for try await instant in inserted { due = instant }
    _ = try await client.query("ANALYZE dpd_bursts")
    return due
  }
  for drainKeys in sizes {
    // The floor, on the same rows, due at once.
    _ = try await insertDue(drainKeys, in: 0)
    let floorStart = ContinuousClock.now
    let floorServerBefore = ProcessCPU.seconds(named: "postgres")
    // The floor's client is this process: nothing else of it works during the floor.
    let floorClientBefore = ProcessCPU.seconds(pid: getpid())
    let floorEnded = try await DrainFloor.drain(
      client: client, name: drainName, clients: workerCount, batch: workerConcurrency,
      logger: silentLogger)
    let floorRate = Double(floorEnded) / seconds(ContinuousClock.now - floorStart)
    guard floorEnded == drainKeys else {
      progress("drain floor: ended \(floorEnded) of \(drainKeys) rows")
      exit(1)
    }
    progress(String(format: "drain floor %d keys: %.0f rows/s", drainKeys, floorRate))
    if !floorServerBefore.isEmpty {
      let used = ProcessCPU.used(
        from: floorServerBefore, to: ProcessCPU.seconds(named: "postgres"))
      progress(
        String(
          format: "drain floor %d keys: CPU per row %.1f µs in the server", drainKeys,
          used / Double(drainKeys) * 1e6))
      emit(
        Figure(
          figure: "drain-floor-server-cpu", workers: workerCount, jobs: drainKeys,
          value: used / Double(drainKeys) * 1e6, unit: "µs/row",
          note: "CPU (user and system) of every postgres process during the floor"))
    }
    if let before = floorClientBefore, let after = ProcessCPU.seconds(pid: getpid()) {
      let perRow = (after - before) / Double(drainKeys) * 1e6
      progress(
        String(
          format: "drain floor %d keys: CPU per row %.1f µs in its client (postgres-nio)",
          drainKeys, perRow))
      emit(
        Figure(
          figure: "drain-floor-client-cpu", workers: workerCount, jobs: drainKeys,
          value: perRow, unit: "µs/row",
          note: "CPU (user and system) of the floor's client, one process with 3 connections"))
    }
    emit(
      Figure(
        figure: "drain-floor", workers: workerCount, jobs: drainKeys, value: floorRate,
        unit: "rows/s",
        note: "by hand: claim \(workerConcurrency) due rows FOR UPDATE SKIP LOCKED, then delete "
          + "them, \(workerCount) connections, prepared"))
    try await reset()

    let runs = RunCounter(total: drainKeys)
    let workerPath = CommandLine.arguments[0]
    var workers: [Process] = []
    for _ in 0..<workerCount {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: workerPath)
      process.arguments = ["--worker", drainName, "\(workerConcurrency)"]
      process.environment = ProcessInfo.processInfo.environment
      // The worker prints how many runs ended, every 10 ms: counted, never shown.
      let output = Pipe()
      process.standardOutput = output
      runs.count(output.fileHandleForReading)
      try process.run()
      workers.append(process)
    }
    try await Task.sleep(for: .seconds(2))
    // All rows share one deadline 5 s (10^5 keys) or 30 s (10^6) from now, on the database's
    // clock, which the statement returns: the clock runs from that instant. The analysis comes
    // before it, so that the workers' claims are planned for the rows.
    let due = try await insertDue(drainKeys, in: drainKeys > 100_000 ? 30 : 5)
    guard Date().timeIntervalSince1970 < due else {
      progress("drain: inserting and analysing the rows took past their deadline")
      exit(1)
    }
    // The CPU each side used from the deadline to the last run: read just before the deadline
    // (the workers only poll until then) and when the last run is counted.
    while Date().timeIntervalSince1970 < due - 0.05 { try await Task.sleep(for: .milliseconds(10)) }
    let serverBefore = ProcessCPU.seconds(named: "postgres")
    let workersBefore = workers.map { ProcessCPU.seconds(pid: $0.processIdentifier) ?? 0 }
    while !runs.isDone { try await Task.sleep(for: .milliseconds(50)) }
    let serverCPU = ProcessCPU.used(from: serverBefore, to: ProcessCPU.seconds(named: "postgres"))
    let workersCPU = zip(workers, workersBefore).reduce(0.0) {
      $0 + (ProcessCPU.seconds(pid: $1.0.processIdentifier) ?? 0) - $1.1
    }
    let tenths = runs.tenths()
    let drainRate = Double(drainKeys) / (tenths.last! - due)
    // Ten tenths: the first from the deadline, each next one from the end of the one before.
    let firstTenth = Double(drainKeys / 10) / (tenths[0] - due)
    let lastTenth = Double(drainKeys / 10) / (tenths[9] - tenths[8])
    progress(
      String(
        format: "drain %d keys: %.0f runs/s (first tenth %.0f, last tenth %.0f)", drainKeys,
        drainRate, firstTenth, lastTenth))
    let note = "concurrency \(workerConcurrency) per worker process"
    emit(
      Figure(
        figure: "drain", workers: workerCount, jobs: drainKeys, value: drainRate, unit: "runs/s",
        note: note))
    if !serverBefore.isEmpty {
      progress(
        String(
          format: "drain %d keys: CPU per run %.1f µs in the server, %.1f µs in the workers",
          drainKeys, serverCPU / Double(drainKeys) * 1e6, workersCPU / Double(drainKeys) * 1e6))
      emit(
        Figure(
          figure: "drain-server-cpu", workers: workerCount, jobs: drainKeys,
          value: serverCPU / Double(drainKeys) * 1e6, unit: "µs/run",
          note: "CPU (user and system) of every postgres process, from the deadline to the last run"
        ))
      emit(
        Figure(
          figure: "drain-worker-cpu", workers: workerCount, jobs: drainKeys,
          value: workersCPU / Double(drainKeys) * 1e6, unit: "µs/run",
          note: "CPU (user and system) of the \(workerCount) worker processes, from the deadline "
            + "to the last run; a handler that only counts"))
    }
    emit(
      Figure(
        figure: "drain-first-tenth", workers: workerCount, jobs: drainKeys, value: firstTenth,
        unit: "runs/s", note: note))
    emit(
      Figure(
        figure: "drain-last-tenth", workers: workerCount, jobs: drainKeys, value: lastTenth,
        unit: "runs/s", note: note))
    for process in workers { process.terminate() }
    for process in workers { process.waitUntilExit() }
    // Every run was counted once: no row of the drain is left.
    for try await left in try await client.query(
      "SELECT count(*)::int8 FROM dpd_bursts WHERE name = \(drainName) AND NOT idle"
    ).decode(Int.self) where left != 0 {
      progress("drain: \(left) rows left after \(drainKeys) runs were counted")
      exit(1)
    }
    try await reset()
  }
}

// 3. fire lateness: one worker, one key at a time, 20 ms delays; idle, then under load.
if parts.contains("lateness") {
  /// The steady load beside the second lateness run: calls a second, from 64 producers.
  let loadRate = 5_000.0
  for load in [0, 64] {
    let latenessQueue = queue("bench-lateness")
    let loadQueue = queue("bench-load")
    let samples = 300
    let lateness = LatenessLog()
    let worker = Task {
      try await latenessQueue.run { _, deadline in
        await lateness.add(Date().timeIntervalSince1970 - deadline)
      }
    }
    let stop = Locked(false)
    let loadTask = Task {
      try await withThrowingTaskGroup(of: Void.self) { group in
        for producer in 0..<load {
          group.addTask {
            var index = 0
            // Paced: `loadRate` calls a second in all, spread over the producers.
            let interval = Duration.seconds(Double(load) / loadRate)
            let start = ContinuousClock.now + interval * (Double(producer) / Double(load))
            while !stop.value {
              try await Task.sleep(until: start + interval * Double(index), clock: .continuous)
              try await loadQueue.delay("p\(producer)-\(index)", for: .seconds(3600), value: 1)
              index += 1
            }
          }
        }
        try await group.waitForAll()
      }
    }
    try await Task.sleep(for: .milliseconds(500))
    for index in 0..<samples {
      let deadline = Date().timeIntervalSince1970 + 0.020
      try await latenessQueue.delay("l\(index)", for: .milliseconds(20), value: deadline)
      try await Task.sleep(for: .milliseconds(40))
    }
    try await Task.sleep(for: .milliseconds(500))
    stop.set(true)
    try await loadTask.value
    worker.cancel()
    try await worker.value
    let sorted = await lateness.values.sorted()
    func percentile(_ fraction: Double) -> Double {
      sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] * 1000
    }
    progress(
      String(
        format: "lateness with %d producers: p50 %.1f ms, p99 %.1f ms (%d of %d fired)", load,
        percentile(0.5), percentile(0.99), sorted.count, samples))
    emit(
      Figure(
        figure: "lateness", producers: load, value: percentile(0.99), unit: "ms",
        p50: percentile(0.5), p99: percentile(0.99), max: (sorted.last ?? 0) * 1000,
        samples: sorted.count,
        note: load == 0
          ? "\(samples) keys, 20 ms delays, one worker, nothing else submitting"
          : "\(samples) keys, 20 ms delays, one worker; \(load) producers submitting "
            + "\(Int(loadRate)) calls/s in all beside it"))
    try await reset()
  }
}

// 4. one submission in a transaction of its own, from one producer: `delay(on:)` against the
// same statement sent by hand on the transaction's connection.
if parts.contains("transaction") {
  let transactionQueue = queue("bench-transaction")
  try await transactionQueue.migrate()
  for way in ["delay(on:)", "by hand"] {
    let rate = try await rate(producers: 1) { _, index in
      try await client.withTransaction(logger: silentLogger) { connection in
        if way == "by hand" {
          let statement = HandSentSubmissionInTransaction(
            submission: HandSentSubmission(name: "bench-transaction", key: "t\(index)"))
          for try await _ in try await connection.execute(statement, logger: silentLogger) {}
        } else {
          try await transactionQueue.delay(
            "t\(index)", for: .seconds(3600), value: 1, on: connection)
        }
      }
    }
    progress(
      String(format: "transaction, %@: %.0f/s", way, rate))
    emit(
      Figure(
        figure: "transaction", mix: way, producers: 1, value: rate, unit: "/s",
        note: "one submission per transaction (PostgresClient.withTransaction), one producer"))
    try await reset()
  }
}

clientRun.cancel()

/// `delay`'s statement for one submission, written here by hand as a service would send it
/// itself: a call of the database's `dpd_submit` (the function the package installs), prepared,
/// with the bindings of a one-hour delay, `.extend`, no `maxWait`, no `maxSubmissions`,
/// `.replace`, no spacing and no trace context.
struct HandSentSubmission: PostgresPreparedStatement {
  typealias Row = Bool
  static let sql = StatementText.delay
  static let bindingDataTypes: [PostgresDataType] = [
    .text, .textArray, .textArray, .float8Array, .bool, .float8, .int8, .bool, .float8,
  ]
  var name = "bench-statement"
  var key: String

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 9)
    bindings.append(name)
    bindings.append([key])
    bindings.append(["1"])
    bindings.append([3_600_000.0])
    bindings.append(false)
    bindings.appendNull()
    bindings.appendNull()
    bindings.append(false)
    bindings.append(0.0)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// ``HandSentSubmission`` as a transactional `delay(on:)` sends it: the plain `SELECT`, which
/// commits with the transaction it runs in (the queue's own `CALL` commits inside the statement,
/// which no transaction block allows).
struct HandSentSubmissionInTransaction: PostgresPreparedStatement {
  typealias Row = Bool
  static let sql = StatementText.delayInTransaction
  static let bindingDataTypes = HandSentSubmission.bindingDataTypes
  var submission: HandSentSubmission

  func makeBindings() -> PostgresBindings { submission.makeBindings() }

  func decodeRow(_ row: PostgresRow) throws -> Row { try submission.decodeRow(row) }
}

/// The write floor's statement: a submission's row written with no rule at all (a fresh key,
/// the deadline an hour away), into a copy of `dpd_bursts` with the same indexes and rows.
struct PlainWrite: PostgresPreparedStatement {
  typealias Row = Int
  static let sql = """
    INSERT INTO bench_write_floor (name, key, value, deadline, due_at, first_submitted)
    VALUES ('bench-write', $1, '1'::jsonb, clock_timestamp() + interval '1 hour',
      clock_timestamp() + interval '1 hour', clock_timestamp())
    """
  static let bindingDataTypes: [PostgresDataType] = [.text]
  var key: String

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 1)
    bindings.append(key)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { 0 }
}

/// Sends `statement` on a connection of the pool and reads its row.
@Sendable func submitByHand(_ statement: HandSentSubmission) async throws {
  for try await _ in try await client.execute(statement, logger: silentLogger) {}
}

actor LatenessLog {
  var values: [Double] = []
  func add(_ value: Double) { values.append(value) }
}

final class Locked<Value: Sendable>: @unchecked Sendable {
  // Sound: `stored` is only touched under `lock`.
  private let lock = NSLock()
  private var stored: Value
  init(_ value: Value) { stored = value }
  var value: Value { lock.withLock { stored } }
  func set(_ value: Value) { lock.withLock { stored = value } }
  func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
    lock.withLock { body(&stored) }
  }
}
