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

  /// `monotonic`: when the handler started, in seconds of this machine's `CLOCK_MONOTONIC`, which
  /// every process of the machine shares (see `monotonicSeconds()`). `firstAttemptMonotonic`:
  /// when this process last started a first attempt of the key (see ``FirstAttempts``). The
  /// record carries this process's wall clock too, which the clock-jump test compares with the
  /// database's.
  func started(
    key: String, value: String, fence: Int64, monotonic: Double, attempt: Int,
    firstAttemptMonotonic: Double?
  ) async throws -> Int {
    let rows = try await client.query(
      """
      INSERT INTO dpd_test_runs (name, key, value, worker, fence, started, monotonic, attempt,
        first_attempt_monotonic, wall)
      VALUES (\(name), \(key), \(value), \(worker), \(fence), clock_timestamp(), \(monotonic),
        \(attempt), \(firstAttemptMonotonic), \(Date().timeIntervalSince1970))
      RETURNING id
      """)
    for try await id in rows.decode(Int.self) { return id }
    throw RecorderError.noID
  }

  /// `monotonic`: when the handler ended, on `CLOCK_MONOTONIC`.
  func finished(_ run: Int, monotonic: Double) async throws {
    try await client.query(
      """
      UPDATE dpd_test_runs SET finished = clock_timestamp(), finished_monotonic = \(monotonic)
      WHERE id = \(run)
      """)
  }

  /// The fencing recipe of the docs: write only over an older fence. Returns whether it wrote,
  /// and records when the write reached the server.
  func fencedWrite(_ run: Int, key: String, value: String, fence: Int64) async throws -> Bool {
    var written: Date?
    let rows = try await client.query(
      """
      INSERT INTO dpd_test_fenced AS f (name, key, value, fence)
      VALUES (\(name), \(key), \(value), \(fence))
      ON CONFLICT (name, key) DO UPDATE SET value = excluded.value, fence = excluded.fence
      WHERE f.fence < excluded.fence
      RETURNING clock_timestamp()
      """)
    for try await time in rows.decode(Date.self) { written = time }
    try await client.query(
      """
      UPDATE dpd_test_runs
      SET fenced_write_applied = \(written != nil), fenced_write_at = \(written)
      WHERE id = \(run)
      """)
    return written != nil
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

/// When this process last started a first attempt of each key, so that a later attempt's record
/// still says when the burst first ran: the record of an attempt can be lost (its insert goes
/// through the worker's pool, which may still back off after an outage, and times out), and the
/// burst is then retried. That start is the burst's own when one process runs the key's bursts,
/// as in the outage test that reads it; with several processes it may be an earlier burst's.
actor FirstAttempts {
  private var starts: [String: Double] = [:]

  /// Notes a handler's start; returns the start of the last first attempt of its key in this
  /// process, or nil when there was none.
  func started(key: String, attempt: Int, monotonic: Double) -> Double? {
    if attempt == 1 { starts[key] = monotonic }
    return starts[key]
  }
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

/// This machine's `CLOCK_MONOTONIC`, in seconds: one clock for every process of the machine,
/// read without a round trip, so that tests can compare when handlers of several processes
/// started.
func monotonicSeconds() -> Double {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Runs `operation` where the handler's cancellation does not reach: a stale run's writes.
func uncancelled<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws
  -> T
{
  try await Task { try await operation() }.value
}

/// Runs `operation`, but throws `RecorderTimeout` after `limit` without waiting for it: the
/// recorder's own queries go through the client's pool with no bound of their own, and a run's
/// record must not hold its handler (and its lease) forever when a restart leaves a query
/// unanswered. The handler then throws, and its burst is retried as any failed run is. The
/// query itself may still land later: a `finished` that lands after its handler threw marks a
/// run finished whose burst runs again, which the replica tests would count as a duplicate; so
/// they give the records a bound far above what a loaded machine takes (`--record-timeout-ms`).
func bounded<T: Sendable>(
  _ limit: Duration, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
  let answer = Answer<T>()
  return try await withCheckedThrowingContinuation { continuation in
    answer.install(continuation)
    let work = Task { answer.resume(await Result { try await operation() }) }
    Task {
      do { try await Task.sleep(for: limit) } catch { return }
      answer.resume(.failure(RecorderTimeout()))
      work.cancel()
    }
  }
}

struct RecorderTimeout: Error {}

/// Resumes a continuation once, from whichever of two tasks comes first. `@unchecked` is sound:
/// `continuation` is read and written only under `lock`.
final class Answer<T: Sendable>: @unchecked Sendable {
  private let lock = NSLock()
  private var continuation: CheckedContinuation<T, any Error>?
  private var early: Result<T, any Error>?

  func install(_ continuation: CheckedContinuation<T, any Error>) {
    lock.lock()
    if let early {
      lock.unlock()
      continuation.resume(with: early)
      return
    }
    self.continuation = continuation
    lock.unlock()
  }

  func resume(_ result: Result<T, any Error>) {
    lock.lock()
    guard let continuation else {
      if early == nil { early = result }
      lock.unlock()
      return
    }
    self.continuation = nil
    lock.unlock()
    continuation.resume(with: result)
  }
}

extension Result where Failure == any Error {
  init(_ body: () async throws -> Success) async {
    do {
      self = .success(try await body())
    } catch {
      self = .failure(error)
    }
  }
}
