import Foundation
import PostgresNIO

// The reads of `snapshot(of:limit:)`, for the operator: which keys wait and when they are due,
// which run and how long their lease has left, which failures are kept, each list limited, with
// its count in all. Read-only. `$2` and `$3` choose the keys (``SnapshotKeys``), `$4` is the
// limit.

/// The key condition of a snapshot's statements: `key = $2` when `$3`, else the keys that begin
/// with `$2` (every key for `""`).
private let chosenKeys = "CASE WHEN $3 THEN key = $2 ELSE starts_with(key, $2) END"

/// The bindings every snapshot statement takes: the queue's name, the keys, the limit.
protocol SnapshotStatement: PostgresPreparedStatement {
  var name: String { get }
  var keys: PostgresQueueSnapshot.Keys { get }
  var limit: Int { get }
}

extension SnapshotStatement {
  static var bindingDataTypes: [PostgresDataType] { [.text, .text, .bool, .int8] }

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 4)
    bindings.append(name)
    switch keys {
    case .all:
      bindings.append("")
      bindings.append(false)
    case .prefix(let prefix):
      bindings.append(prefix)
      bindings.append(false)
    case .key(let key):
      bindings.append(key)
      bindings.append(true)
    }
    bindings.append(limit)
    return bindings
  }
}

/// The waiting bursts, earliest due first, with their count in all.
struct WaitingBurstsStatement: SnapshotStatement {
  typealias Row = (burst: PostgresWaitingBurst, count: Int)

  static let sql = """
    SELECT key, extract(epoch FROM due_at)::float8,
      (extract(epoch FROM due_at - dpd_now()) * 1000)::float8, submissions, attempts,
      fence, count(*) OVER ()
    FROM dpd_bursts
    WHERE name = $1 AND \(SQLFragment.holdsWork) AND claim IS NULL AND \(chosenKeys)
    ORDER BY due_at, key LIMIT $4
    """
  var name: String
  var keys: PostgresQueueSnapshot.Keys
  var limit: Int

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (key, due, dueInMilliseconds, submissions, attempts, fence, count) = try row.decode(
      (String, Double, Double, Int, Int, Int64?, Int).self)
    let burst = PostgresWaitingBurst(
      key: key, due: Date(timeIntervalSince1970: due), dueIn: .milliseconds(dueInMilliseconds),
      submissions: submissions, attempts: attempts, fence: fence)
    return (burst, count)
  }
}

/// The running bursts, by key, with their count in all. `runningBursts()` reads every one.
struct RunningBurstsStatement: SnapshotStatement {
  typealias Row = (burst: PostgresRunningBurst, count: Int)

  static let sql = """
    SELECT key, coalesce(owner, ''), attempts, coalesce(fence, 0),
      (extract(epoch FROM due_at - dpd_now()) * 1000)::float8, count(*) OVER ()
    FROM dpd_bursts
    WHERE name = $1 AND claim IS NOT NULL AND NOT failed AND \(chosenKeys)
    ORDER BY key LIMIT $4
    """
  var name: String
  var keys: PostgresQueueSnapshot.Keys = .all
  var limit: Int = .max

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (key, owner, attempt, fence, leftMilliseconds, count) = try row.decode(
      (String, String, Int, Int64, Double, Int).self)
    let burst = PostgresRunningBurst(
      key: key, owner: owner, attempt: attempt, fence: fence,
      leaseLeft: .milliseconds(leftMilliseconds))
    return (burst, count)
  }
}

/// The kept failures, oldest first, with their count in all. `rawFailures()` reads every one.
struct FailuresStatement: SnapshotStatement {
  typealias Row = (failure: PostgresRawBurstFailure, count: Int)

  static let sql = """
    SELECT id, key, value::text, attempts, last_error, count(*) OVER () FROM dpd_failures
    WHERE name = $1 AND \(chosenKeys) ORDER BY id LIMIT $4
    """
  var name: String
  var keys: PostgresQueueSnapshot.Keys = .all
  var limit: Int = .max

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (id, key, json, attempts, lastError, count) = try row.decode(
      (Int64, String, String, Int, String, Int).self)
    let failure = PostgresRawBurstFailure(
      id: id, key: key, json: json, attempts: attempts, lastError: lastError)
    return (failure, count)
  }
}

/// Whether a `migrate()` of a queue of this name ran in the database (its options are stored).
struct QueueKnownStatement: QueueReadStatement {
  typealias Row = Bool

  static let sql = "SELECT EXISTS (SELECT 1 FROM dpd_queues WHERE name = $1)"
  var name: String

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}
