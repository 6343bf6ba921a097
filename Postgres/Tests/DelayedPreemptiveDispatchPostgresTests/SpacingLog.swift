import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Every claim of one queue's rows, recorded by a trigger on `dpd_bursts`: the key, the fence,
/// and the database's `clock_timestamp()` once the claim statement has updated the row. The
/// claim decided that the run may start, and took the instant it records as the run's start,
/// before that: so this instant is an upper bound on the run's start, measured without reading
/// the package's own record of it.
struct ClaimLog {
  let client: PostgresClient
  let name: String

  private var function: String {
    "dpd_test_claims_" + name.replacingOccurrences(of: "-", with: "_")
  }

  /// Installs the trigger for queue `name`, runs `body`, and removes the trigger, also when
  /// `body` throws.
  static func recording<Output: Sendable>(
    _ name: String, client: PostgresClient, _ body: (ClaimLog) async throws -> Output
  ) async throws -> Output {
    precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" })
    let log = ClaimLog(client: client, name: name)
    try await client.query(
      """
      CREATE TABLE IF NOT EXISTS dpd_test_claims (
        name text NOT NULL, key text NOT NULL, fence bigint NOT NULL, at float8 NOT NULL)
      """)
    try await client.query(
      PostgresQuery(
        unsafeSQL: """
          CREATE FUNCTION \(log.function)() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO dpd_test_claims (name, key, fence, at)
            VALUES (NEW.name, NEW.key, NEW.fence, extract(epoch FROM clock_timestamp()));
            RETURN NULL;
          END $$
          """))
    try await client.query(
      PostgresQuery(
        unsafeSQL: """
          CREATE TRIGGER \(log.function) AFTER UPDATE ON dpd_bursts FOR EACH ROW
          WHEN (NEW.name = '\(name)' AND NEW.fence IS DISTINCT FROM OLD.fence)
          EXECUTE FUNCTION \(log.function)()
          """))
    let outcome = await Result { try await body(log) }
    try await client.query(PostgresQuery(unsafeSQL: "DROP TRIGGER \(log.function) ON dpd_bursts"))
    try await client.query(PostgresQuery(unsafeSQL: "DROP FUNCTION \(log.function)()"))
    return try outcome.get()
  }

  /// Each key's latest claim's instant (Unix seconds, database clock).
  func latestClaimByKey() async throws -> [String: Double] {
    var claims: [String: Double] = [:]
    let rows = try await client.query(
      "SELECT key, max(at) FROM dpd_test_claims WHERE name = \(name) GROUP BY key")
    for try await (key, at) in rows.decode((String, Double).self) { claims[key] = at }
    return claims
  }

  /// Each claim's instant (Unix seconds, database clock), by fence.
  func claims() async throws -> [Int64: Double] {
    var claims: [Int64: Double] = [:]
    let rows = try await client.query(
      "SELECT fence, at FROM dpd_test_claims WHERE name = \(name)")
    for try await (fence, at) in rows.decode((Int64, Double).self) { claims[fence] = at }
    return claims
  }
}

/// One run as its handler saw it: when it started, on the database's clock (Unix seconds, read
/// by a query the handler sends first) and on the machine's `CLOCK_MONOTONIC` (seconds, read
/// first of all: exact, and shared by every process of the machine), and on which worker.
struct StartedRun: Sendable {
  var key: String
  var value: String
  var fence: Int64
  var attempt: Int
  var started: Double
  var monotonic: Double
  var worker: String
}

/// This machine's `CLOCK_MONOTONIC`, in seconds, as `dpd-postgres-test-worker` reads it.
func monotonicSeconds() -> Double {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// The runs that in-process handlers recorded.
final class StartedRuns: Sendable {
  private let runs = Locked<[StartedRun]>([])

  var all: [StartedRun] { runs.withLock { $0 } }

  /// Records a run that starts now, reading the database's clock through `client`.
  func record<Value: Codable & Sendable>(
    _ run: PostgresBurstRun<Value>, value: String, worker: String, client: PostgresClient
  ) async throws {
    let monotonic = monotonicSeconds()
    let started = try await Self.databaseNow(client)
    runs.withLock {
      $0.append(
        StartedRun(
          key: run.key, value: value, fence: run.fence, attempt: run.attempt, started: started,
          monotonic: monotonic, worker: worker))
    }
  }

  /// The database's `clock_timestamp()`, in Unix seconds.
  static func databaseNow(_ client: PostgresClient) async throws -> Double {
    let rows = try await client.query("SELECT extract(epoch FROM clock_timestamp())::float8")
    for try await now in rows.decode(Double.self) { return now }
    throw NoClock()
  }

  struct NoClock: Error {}
}

/// What the runs of one key show about their spacing, in seconds, for each run after the key's
/// first (in fence order, which is claim order):
/// - `betweenStarts`: from the previous run's handler start to this one's, on `CLOCK_MONOTONIC`
///   (T1: at least the spacing);
/// - `afterClaim`: from the previous run's claim to this run's handler start, on the database's
///   clock (at least the spacing: the claim is where a run starts in the database);
/// - `afterStart`: from the previous run's handler start to this one's, on the database's clock
///   as each handler read it (late by a round trip that varies);
/// - `claimGaps`: from the previous run's claim to this run's claim, on the database's clock.
struct Spacing: CustomStringConvertible {
  var betweenStarts: [Double] = []
  var afterClaim: [Double] = []
  var afterStart: [Double] = []
  var claimGaps: [Double] = []
  /// Pairs of consecutive runs on different workers.
  var acrossWorkers = 0
  /// Runs whose claim the trigger did not see: must be none.
  var unlogged = 0

  init(_ runs: [StartedRun], claims: [Int64: Double]) {
    let ordered = runs.sorted { $0.fence < $1.fence }
    for (previous, run) in zip(ordered, ordered.dropFirst()) {
      guard let claimed = claims[previous.fence], let next = claims[run.fence] else {
        unlogged += 1
        continue
      }
      betweenStarts.append(run.monotonic - previous.monotonic)
      afterClaim.append(run.started - claimed)
      afterStart.append(run.started - previous.started)
      claimGaps.append(next - claimed)
      if run.worker != previous.worker { acrossWorkers += 1 }
    }
  }

  var minimumAfterClaim: Double { afterClaim.min() ?? .infinity }
  var minimumBetweenStarts: Double { betweenStarts.min() ?? .infinity }

  static func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
  }

  var description: String {
    func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
    return "\(afterClaim.count + 1) runs; between handler starts (monotonic clock): min "
      + "\(ms(minimumBetweenStarts)); on the database's clock: handler start after the previous "
      + "claim: min \(ms(minimumAfterClaim)), between handler starts as read: min "
      + "\(ms(afterStart.min() ?? .nan)); "
      + "between claims: min \(ms(claimGaps.min() ?? .nan)), median "
      + "\(ms(Self.median(claimGaps))), max \(ms(claimGaps.max() ?? .nan)); "
      + "\(acrossWorkers) consecutive pairs on different workers"
  }
}

/// The state of a key's row, as the spacing tests look at it.
enum KeyRow: Equatable {
  case none
  case idle
  case waiting
  case running
  case failed

  static func of(_ key: String, in name: String, client: PostgresClient) async throws -> KeyRow {
    let rows = try await client.query(
      """
      SELECT idle, claim IS NOT NULL, failed FROM dpd_bursts
      WHERE name = \(name) AND key = \(key)
      """)
    for try await (idle, claimed, failed) in rows.decode((Bool, Bool, Bool).self) {
      if idle { return .idle }
      if failed { return .failed }
      return claimed ? .running : .waiting
    }
    return .none
  }

  /// Rows of queue `name`, idle or not.
  static func count(in name: String, client: PostgresClient) async throws -> Int {
    let rows = try await client.query("SELECT count(*) FROM dpd_bursts WHERE name = \(name)")
    for try await count in rows.decode(Int.self) { return count }
    return 0
  }
}
