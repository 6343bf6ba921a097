import Foundation
import PostgresNIO

/// Claims up to `limit` due rows (waiting past their deadline, or running with an expired
/// lease), skipping rows that another replica is claiming at this moment. Each claim counts as
/// an attempt, when it is made, and takes a fence from the sequence `dpd_fence`; it runs the
/// row's head burst (`value`), so a burst taken over runs again with its own value, and the
/// bursts behind it still wait. A head whose lease ran out after its `maxAttempts`-th run (its
/// worker died or lost the lease every time) is not run again: it is kept in `dpd_failures`
/// with its value (P17), written by this statement from the row as it locked it, and comes back
/// unclaimed. When no burst waits behind it, the row is left `idle` (`exhausted`; a later claim
/// deletes it once the spacing has passed, at once without one); when one does, that one becomes
/// the head (`gaveWay`), and a later claim runs it.
///
/// A claim of a head that waited for its first run takes it out of the retried failures that
/// are first in line (`retried_first`, see `Schema`), if it was one; a claimed head alone is the
/// newest burst, and no longer a sealed one that waits.
///
/// A claim starts a run: it sets `last_start` (which the run's recorded end moves to its
/// handler's start). Under `minimumSpacing` ($6, milliseconds) a claimed row's lease ends no
/// sooner than the spacing from the claim, so that a takeover (a run too) keeps the spacing as
/// well; the burst behind an exhausted head is due no sooner than the spacing from the lost
/// run's claim. The rows kept only for the spacing (`idle`) are never
/// claimed: the claim deletes those whose spacing has passed, a few more than it claims, so that
/// they are gone soon after their spacing while any worker runs. The lateness it returns counts
/// from the deadline, or from the end of the spacing when that is later.
///
/// A claim that takes a burst over (its lease ran out) also ends the stale run's open
/// transaction, if its handler is transactional and its transaction still open
/// (`dpd_end_stale_run`): that run's row locks would otherwise hold up the new run's writes
/// until its worker woke up, forever for a worker that stays paused or cut off. Its writes were
/// never to land anyway (P16: its end would find its claim gone and roll back).
///
/// It also returns the head's trace
/// record for the run's span: its stored contexts, and its submission count (kept in the record
/// once a burst behind it started, else the row's `submissions`; 1 when neither is known, for a
/// burst stored before schema version 5 with bursts behind it).
struct ClaimStatement: PostgresPreparedStatement {
  typealias Row = ClaimedBurst

  /// Calls `dpd_claim`, whose body is ``body`` (see `DatabaseFunctions`): the plan is made
  /// once per session.
  static let sql = "SELECT * FROM dpd_claim($1, $2, $3, $4, $5, $6)"

  /// The claim's SQL: `$1` to `$6` are the bindings, in the order of ``bindingDataTypes``. The
  /// update also names the locked rows' keys as an array: with a plan made for any parameters,
  /// which counts on a tenth of the table being due, a join by key alone would hash the whole
  /// table; the array makes it read the rows by their key. (A join by `ctid` would be as quick,
  /// but would miss a row updated by another transaction between the statement's snapshot and
  /// its lock, which the update by key follows to its newest version.)
  static let body = """
    WITH due AS (
      SELECT key, claim IS NOT NULL AS taken_over, claim AS stale_claim, last_start,
        claim IS NOT NULL AND attempts >= $5 AS exhausted, attempts, value, later, submissions,
        traces
      FROM dpd_bursts
      WHERE name = $1 AND \(SQLFragment.holdsWork) AND due_at <= dpd_now()
      ORDER BY due_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ), kept AS (
      INSERT INTO dpd_failures (name, key, value, attempts, last_error, traces)
      SELECT $1, due.key, due.value, due.attempts,
        'its last run never ended (its worker died or lost its lease); ' || due.attempts
          || ' runs in all', \(SQLFragment.keptTraceRecord("due"))
      FROM due WHERE due.exhausted
      ORDER BY due.key
    ), expired AS (
      SELECT key FROM dpd_bursts
      WHERE name = $1 AND idle AND due_at <= dpd_now()
      ORDER BY due_at
      LIMIT $2 * 2 + 100
      FOR UPDATE SKIP LOCKED
    ), swept AS (
      DELETE FROM dpd_bursts AS i USING expired WHERE i.name = $1 AND i.key = expired.key
    ), ended AS (
      SELECT due.key, dpd_end_stale_run(due.stale_claim) AS ended FROM due WHERE due.taken_over
    )
    UPDATE dpd_bursts AS b SET
      idle = \(exhausted) AND b.later = '[]'::jsonb,
      last_error = CASE WHEN \(exhausted) THEN NULL ELSE b.last_error END,
      value = CASE WHEN \(givesWay) THEN b.later -> 0 WHEN \(exhausted) THEN 'null'::jsonb
        ELSE b.value END,
      later = CASE WHEN \(givesWay) THEN b.later - 0 ELSE b.later END,
      traces = CASE WHEN \(exhausted) THEN b.traces - 0 ELSE b.traces END,
      submissions = CASE WHEN \(exhausted) AND NOT \(givesWay) THEN 0 ELSE b.submissions END,
      claim = CASE WHEN \(exhausted) THEN NULL ELSE gen_random_uuid() END,
      owner = CASE WHEN \(exhausted) THEN NULL ELSE $3 END,
      claimed_generation = CASE WHEN \(exhausted) THEN NULL ELSE b.generation END,
      fence = CASE WHEN \(exhausted) THEN b.fence ELSE nextval('dpd_fence') END,
      attempts = CASE WHEN \(exhausted) THEN 0 ELSE b.attempts + 1 END,
      sealed = b.sealed AND b.later <> '[]'::jsonb,
      retried_first = CASE WHEN b.claim IS NULL AND b.attempts = 0
        THEN greatest(b.retried_first - 1, 0) ELSE b.retried_first END,
      last_start = CASE WHEN \(exhausted) THEN b.last_start ELSE dpd_now() END,
      due_at = CASE
        WHEN \(givesWay) THEN greatest(\(SQLFragment.nextHeadDue), \(SQLFragment.spacedFrom("$6")))
        WHEN \(exhausted) THEN greatest(dpd_now(), \(SQLFragment.spacedFrom("$6")))
        ELSE dpd_now() + greatest($4, $6) * interval '1 millisecond' END
    FROM due
    WHERE b.name = $1 AND b.key = due.key AND b.key = ANY (ARRAY(SELECT due.key FROM due))
    RETURNING b.key, b.value::text, b.claim,
      CASE WHEN b.claim IS NULL THEN due.attempts ELSE b.attempts END, b.fence,
      b.claim IS NULL AND b.idle,
      due.taken_over,
      (extract(epoch FROM dpd_now()
        - greatest(b.deadline, \(SQLFragment.spacedFrom("$6", row: "due")))) * 1000)::float8,
      (b.traces -> 0 -> 'contexts')::text,
      coalesce((b.traces -> 0 ->> 'count')::int8,
        CASE WHEN b.later = '[]'::jsonb THEN b.submissions ELSE 1 END),
      coalesce((SELECT ended.ended FROM ended WHERE ended.key = b.key), false)
    """
  /// A run of this row began and never recorded its end `maxAttempts` times.
  private static let exhausted = "(b.claim IS NOT NULL AND b.attempts >= $5)"
  /// The burst behind the exhausted head becomes the head.
  private static let givesWay = "(\(exhausted) AND b.later <> '[]'::jsonb)"
  static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .text, .float8, .int8, .float8]

  var name: String
  var limit: Int
  var owner: String
  var leaseMilliseconds: Double
  var maxAttempts: Int
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 6)
    bindings.append(name)
    bindings.append(limit)
    bindings.append(owner)
    bindings.append(leaseMilliseconds)
    bindings.append(maxAttempts)
    bindings.append(minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row {
    var columns = ColumnReader(row)
    let key: String = try columns.next()
    let json: String = try columns.next()
    let claim: UUID? = try columns.next()
    let attempts: Int = try columns.next()
    let fence: Int64? = try columns.next()
    let exhausted: Bool = try columns.next()
    let takenOver: Bool = try columns.next()
    let lateness: Double = try columns.next()
    let contexts: String? = try columns.next()
    let count: Int = try columns.next()
    let ended: Bool = try columns.next()
    return ClaimedBurst(
      key: key, json: json, claim: claim ?? UUID(), attempt: attempts, fence: fence ?? 0,
      exhausted: exhausted, gaveWay: claim == nil && !exhausted, takenOver: takenOver,
      endedStaleTransaction: ended, latenessMilliseconds: lateness, submissions: count,
      traceContexts: contexts)
  }
}
