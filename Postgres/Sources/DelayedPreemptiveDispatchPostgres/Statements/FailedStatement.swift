import Foundation
import PostgresNIO

/// The end of a run that threw: retry the head after an exponential backoff, or keep it in
/// `dpd_failures` once it has had `maxAttempts` runs (the claim counted this one), with its value
/// and trace record, written by this statement from the row as it locked it (P17). A kept head
/// never takes the bursts behind it with it: the next one becomes the head, due as after a
/// successful run, and a head alone leaves the row as a successful run does (deleted, or kept
/// `idle` while `minimumSpacing` lasts). With attempts left and a burst waiting behind the head
/// (submitted during the run or the retry's backoff, or after a burst reached `maxSubmissions`),
/// the head gives way to it with `.replace` (its value is out of date: the newer one replaces
/// it, as a submission would have) and is retried before it with `.append`, so no value is
/// dropped. Returns `Outcome`; no row when the claim was taken over. A retry is a run too: under
/// `minimumSpacing` ($8), the head or the burst behind it is due no sooner than the spacing from
/// the failed run's start, its handler's start as `SucceededStatement` takes it ($9:
/// milliseconds since the handler started, -1 if it did not). As in `SucceededStatement`, every
/// new value is computed in `ended`, from the row as it was locked.
struct FailedStatement: PostgresPreparedStatement {
  typealias Row = Outcome

  enum Outcome: Int, Sendable {
    /// The head runs again after the backoff.
    case retried = 0
    /// The head is kept in `dpd_failures`; the burst behind it, if any, is the head now.
    case kept = 1
    /// With `.replace` and attempts left, the head gave way to the newer burst behind it, which
    /// is the head now.
    case gaveWay = 2
  }

  static let sql = """
    WITH ended AS (
      SELECT b.key, b.value, b.attempts, \(SQLFragment.keptTraceRecord("b")) AS kept_trace,
        \(spent) AS spent, b.later = '[]'::jsonb AS alone,
        b.later <> '[]'::jsonb AND NOT $7 AND NOT \(spent) AS gives_way,
        CASE WHEN b.later = '[]'::jsonb THEN \(retryAt) ELSE b.deadline END AS retry_deadline,
        greatest(\(retryAt), \(spacedUntil)) AS retry_due,
        \(SQLFragment.endOfRun(since: "$9", spacing: "$8"))
      FROM dpd_bursts AS b
      WHERE b.name = $1 AND b.key = $2 AND b.claim = $3
      FOR UPDATE
    ), kept AS (
      INSERT INTO dpd_failures (name, key, value, attempts, last_error, traces)
      SELECT $1, ended.key, ended.value, ended.attempts, $6, ended.kept_trace
      FROM ended WHERE ended.spent
    ), deleted AS (
      DELETE FROM dpd_bursts AS b USING ended
      WHERE b.name = $1 AND b.key = ended.key AND ended.spent AND ended.alone
        AND NOT ended.rests
      RETURNING 1 AS outcome
    ), rested AS (
      UPDATE dpd_bursts AS b SET \(SQLFragment.restingAfterRun("ended"))
      FROM ended
      WHERE b.name = $1 AND b.key = ended.key AND ended.spent AND ended.alone AND ended.rests
      RETURNING 1 AS outcome
    ), next AS (
      UPDATE dpd_bursts AS b SET \(SQLFragment.nextHeadAfterRun("ended")),
        last_error = NULL
      FROM ended
      WHERE b.name = $1 AND b.key = ended.key AND NOT ended.alone
        AND (ended.spent OR ended.gives_way)
      RETURNING CASE WHEN ended.spent THEN 1 ELSE 2 END AS outcome
    ), retried AS (
      UPDATE dpd_bursts AS b SET \(SQLFragment.releasedClaim),
        last_error = $6, deadline = ended.retry_deadline, due_at = ended.retry_due,
        last_start = ended.started
      FROM ended
      WHERE b.name = $1 AND b.key = ended.key AND NOT ended.spent AND NOT ended.gives_way
      RETURNING 0 AS outcome
    )
    SELECT outcome FROM deleted UNION ALL SELECT outcome FROM rested
    UNION ALL SELECT outcome FROM next UNION ALL SELECT outcome FROM retried
    """
  /// The head has had its `maxAttempts` runs.
  private static let spent = "(b.attempts >= $4)"
  /// base × 2^(runs so far − 1), at most five minutes.
  private static let retryAt =
    "dpd_now() + least($5 * power(2, greatest(b.attempts - 1, 0)), 300000) "
    + "* interval '1 millisecond'"
  /// The end of `minimumSpacing` after the failed run's start.
  private static let spacedUntil = SQLFragment.spacedAfterRun(since: "$9", spacing: "$8")
  static let bindingDataTypes: [PostgresDataType] = [
    .text, .text, .uuid, .int8, .float8, .text, .bool, .float8, .float8,
  ]

  var name: String
  var key: String
  var claim: UUID
  var maxAttempts: Int
  var backoffMilliseconds: Double
  var error: String
  var append: Bool
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0
  /// The claim's `ClaimedBurst.millisecondsSinceHandlerStart`.
  var millisecondsSinceHandlerStart: Double = -1

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 9)
    bindings.append(name)
    bindings.append(key)
    bindings.append(claim)
    bindings.append(maxAttempts)
    bindings.append(backoffMilliseconds)
    bindings.append(error)
    bindings.append(append)
    bindings.append(minimumSpacingMilliseconds)
    bindings.append(millisecondsSinceHandlerStart)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row {
    Outcome(rawValue: try row.decode(Int.self)) ?? .retried
  }
}
