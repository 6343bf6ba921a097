import Foundation
import PostgresNIO

/// Records each run's start and end (database clock) in `dpd_test_runs`, so that tests can
/// check in SQL that no two runs of one key overlapped; and, for the fencing test, the outcome
/// of a fenced write and when the run saw its cancellation. The tests create the tables
/// (`RunTable.create` in the tests).
struct RunRecorder: Sendable {
  let client: PostgresClient
  let worker: String
  let name: String

  func started(key: String, value: String, fence: Int64) async throws -> Int {
    let rows = try await client.query(
      """
      INSERT INTO dpd_test_runs (name, key, value, worker, fence, started)
      VALUES (\(name), \(key), \(value), \(worker), \(fence), clock_timestamp()) RETURNING id
      """)
    for try await id in rows.decode(Int.self) { return id }
    throw RecorderError.noID
  }

  func finished(_ run: Int) async throws {
    try await client.query(
      "UPDATE dpd_test_runs SET finished = clock_timestamp() WHERE id = \(run)")
  }

  /// The fencing recipe of the docs: write only over an older fence. Returns whether it wrote.
  func fencedWrite(_ run: Int, key: String, value: String, fence: Int64) async throws -> Bool {
    var applied = false
    let rows = try await client.query(
      """
      INSERT INTO dpd_test_fenced AS f (name, key, value, fence)
      VALUES (\(name), \(key), \(value), \(fence))
      ON CONFLICT (name, key) DO UPDATE SET value = excluded.value, fence = excluded.fence
      WHERE f.fence < excluded.fence
      RETURNING true
      """)
    for try await _ in rows { applied = true }
    try await client.query(
      "UPDATE dpd_test_runs SET fenced_write_applied = \(applied) WHERE id = \(run)")
    return applied
  }

  /// Records when (Unix time on this machine's clock) the run saw its cancellation.
  func cancelled(_ run: Int, at time: Double) async throws {
    try await client.query("UPDATE dpd_test_runs SET cancelled_at = \(time) WHERE id = \(run)")
  }

  /// Writes runs in one statement (`--record-batched`): key, value, fence, and no times.
  func batch(_ runs: [(key: String, value: String, fence: Int64)]) async throws {
    guard !runs.isEmpty else { return }
    try await client.query(
      """
      INSERT INTO dpd_test_runs (name, key, value, worker, fence, started, finished)
      SELECT \(name), k, v, \(worker), f, clock_timestamp(), clock_timestamp()
      FROM unnest(\(runs.map(\.key))::text[], \(runs.map(\.value))::text[],
        \(runs.map(\.fence))::int8[]) AS r(k, v, f)
      """)
  }

  enum RecorderError: Error { case noID }
}

/// Collects runs in memory and writes them in batches, so that recording costs the drain of a
/// large backlog little.
actor RunBatch {
  private var runs: [(key: String, value: String, fence: Int64)] = []
  let recorder: RunRecorder

  init(recorder: RunRecorder) {
    self.recorder = recorder
  }

  func add(key: String, value: String, fence: Int64) {
    runs.append((key, value, fence))
  }

  func flush() async throws {
    let batch = runs
    runs = []
    try await recorder.batch(batch)
  }
}

/// Runs `operation` where the handler's cancellation does not reach: a stale run's writes.
func uncancelled<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws
  -> T
{
  try await Task { try await operation() }.value
}
