// dpd-postgres-bench: the PostgreSQL package's figures, measured once against a real server.
//
//   swift build -c release --package-path Postgres
//   DPD_POSTGRES_URL=$(scripts/postgres.sh start) Postgres/.build/release/dpd-postgres-bench
//
// 1. delay throughput: 8 producers submitting distinct keys (the upsert, nothing due).
// 2. drain: 10^5 keys due at once, run by 3 dpd-postgres-worker processes (runs/s).
// 3. fire lateness: deadline to handler start on an idle system, one worker, p50/p99.
// scripts/postgres-bench.sh runs this, then pgbench with the same upsert and 8 clients.
import DelayedPreemptiveDispatchPostgres
import Foundation
import PostgresNIO

guard let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"], !url.isEmpty else {
  print("set DPD_POSTGRES_URL (scripts/postgres.sh start prints one)")
  exit(2)
}
let configuration = try PostgresURL.configuration(url)
let client = PostgresClient(configuration: configuration)
let clientRun = Task { await client.run() }
let arguments = CommandLine.arguments.dropFirst()
let producers = 8
let perProducer = 5_000

func queue(_ name: String) -> PostgresDelayedPreemptiveQueue<Double> {
  PostgresDelayedPreemptiveQueue<Double>(client: client, configuration: configuration, name: name)
}

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

// 0. the client's floor: the same 8 producers sending `SELECT 1`.
let floorStart = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
  for _ in 0..<producers {
    group.addTask { for _ in 0..<perProducer { try await client.query("SELECT 1") } }
  }
  try await group.waitForAll()
}
let floor = Double(producers * perProducer) / seconds(ContinuousClock.now - floorStart)
print(String(format: "client floor: %.0f SELECT 1/s (%d producers)", floor, producers))

// 1. delay throughput
let throughputQueue = queue("bench-delay-\(getpid())")
try await throughputQueue.migrate()
let throughputStart = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
  for producer in 0..<producers {
    group.addTask {
      for index in 0..<perProducer {
        try await throughputQueue.delay("p\(producer)-\(index)", for: .seconds(3600), value: 1)
      }
    }
  }
  try await group.waitForAll()
}
let throughput = Double(producers * perProducer) / seconds(ContinuousClock.now - throughputStart)
print(
  String(
    format: "delay throughput: %.0f submissions/s (%d producers, %d each)", throughput,
    producers, perProducer))
_ = try await client.query("DELETE FROM dpd_bursts WHERE name = \(throughputQueue.name)")

// 2. drain of 10^5 keys due at once, 3 worker processes
let drainName = "bench-drain-\(getpid())"
let drainKeys = 100_000
let workerPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  .appendingPathComponent("dpd-postgres-worker").path
var workers: [Process] = []
for _ in 0..<3 {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: workerPath)
  process.arguments = ["--name", drainName, "--quiet", "--concurrency", "32"]
  process.environment = ProcessInfo.processInfo.environment
  try process.run()
  workers.append(process)
}
try await Task.sleep(for: .seconds(2))
// All rows share one deadline 2 s from now, on the database's clock.
_ = try await client.query(
  """
  INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
  SELECT \(drainName), 'k' || i, '"x"'::jsonb, t, t, t
  FROM generate_series(1, \(drainKeys)) AS i, (SELECT clock_timestamp() + interval '2 s' AS t) AS d
  """)
try await Task.sleep(for: .seconds(2))
let drainStart = ContinuousClock.now
// `pendingCount()` counts 10^5 rows; polling it would load the server being measured.
func anyLeft() async throws -> Bool {
  for try await left in try await client.query(
    "SELECT EXISTS (SELECT 1 FROM dpd_bursts WHERE name = \(drainName) AND NOT failed)"
  ).decode(Bool.self) { return left }
  return false
}
while try await anyLeft() { try await Task.sleep(for: .milliseconds(50)) }
let drainRate = Double(drainKeys) / seconds(ContinuousClock.now - drainStart)
print(
  String(
    format: "drain: %.0f runs/s (%d keys due at once, 3 worker processes)", drainRate,
    drainKeys))
for process in workers { process.terminate() }
for process in workers { process.waitUntilExit() }

// 3. fire lateness on an idle system: one worker, one key at a time, 20 ms delays.
let latenessQueue = queue("bench-lateness-\(getpid())")
let samples = 300
let lateness = LatenessLog()
let worker = Task {
  try await latenessQueue.run { _, deadline in
    await lateness.add(Date().timeIntervalSince1970 - deadline)
  }
}
try await Task.sleep(for: .milliseconds(500))
for index in 0..<samples {
  let deadline = Date().timeIntervalSince1970 + 0.020
  try await latenessQueue.delay("l\(index)", for: .milliseconds(20), value: deadline)
  try await Task.sleep(for: .milliseconds(40))
}
try await Task.sleep(for: .milliseconds(500))
worker.cancel()
try await worker.value
let sorted = await lateness.values.sorted()
func percentile(_ fraction: Double) -> Double {
  sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] * 1000
}
print(
  String(
    format: "fire lateness: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d of %d fired)",
    percentile(0.5), percentile(0.99), (sorted.last ?? 0) * 1000, sorted.count, samples))
clientRun.cancel()

actor LatenessLog {
  var values: [Double] = []
  func add(_ value: Double) { values.append(value) }
}
