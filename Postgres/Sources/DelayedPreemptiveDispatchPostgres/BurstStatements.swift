import Foundation
import PostgresNIO

// The SQL of the queue, one prepared statement per operation. Every instant comes from the
// database's `clock_timestamp()`, never from a replica's clock. Durations travel as
// milliseconds (float8). `$1` is always the queue's name.

/// `delay`: one upsert for a batch of submissions with distinct keys (one submission when the
/// queue is quiet; see `SubmissionBatcher`). It returns whether it woke the workers: only when
/// a new deadline is earlier than every deadline they know of, so that writers do not all
/// NOTIFY (a NOTIFY takes a database-wide lock at commit). Rows are upserted in key order, so
/// that concurrent batches lock rows in one order and cannot deadlock.
struct DelayStatement: PostgresPreparedStatement {
  typealias Row = Bool

  static let sql = """
    WITH earliest AS (
      SELECT min(due_at) AS at FROM dpd_bursts WHERE name = $1 AND NOT failed
    ), upserted AS (
      INSERT INTO dpd_bursts AS b (name, key, value, deadline, due_at, first_submitted)
      SELECT $1, s.key, s.value::jsonb,
        now.t + least(greatest(s.delay, 0), $6) * interval '1 millisecond',
        now.t + least(greatest(s.delay, 0), $6) * interval '1 millisecond', now.t
      FROM unnest($2::text[], $3::text[], $4::float8[]) AS s(key, value, delay),
        (SELECT clock_timestamp() AS t) AS now
      ORDER BY s.key
      ON CONFLICT (name, key) DO UPDATE SET
        value = excluded.value,
        generation = b.generation + 1,
        first_submitted = CASE WHEN \(freshBurst) THEN excluded.first_submitted
          ELSE b.first_submitted END,
        deadline = CASE WHEN \(freshBurst) THEN excluded.deadline ELSE \(mergedDeadline) END,
        due_at = CASE WHEN b.claim IS NOT NULL THEN b.due_at
          WHEN b.failed THEN excluded.due_at ELSE \(mergedDeadline) END,
        attempts = CASE WHEN b.failed THEN 0 ELSE b.attempts END,
        last_error = CASE WHEN b.failed THEN NULL ELSE b.last_error END,
        failed = false
      RETURNING b.due_at, b.claim IS NULL AS waiting
    )
    SELECT CASE WHEN EXISTS (
        SELECT 1 FROM upserted, earliest
        WHERE upserted.waiting AND upserted.due_at < coalesce(earliest.at, 'infinity'))
      THEN (SELECT true FROM pg_notify('\(wakeChannel)', $1)) ELSE false END
    """

  /// A submission starts a new burst when the key's last one failed for good, or when it is
  /// running and no submission arrived since its claim (it runs after the running one: runs of
  /// one key never overlap).
  private static let freshBurst =
    "(b.failed OR (b.claim IS NOT NULL AND b.generation = b.claimed_generation))"
  /// `.restart` sets the deadline, `.extend` only moves it later; `maxWait` bounds both.
  private static let mergedDeadline = """
    least(CASE WHEN $5 THEN excluded.deadline ELSE greatest(b.deadline, excluded.deadline) END,
      b.first_submitted + $6 * interval '1 millisecond')
    """

  static let bindingDataTypes: [PostgresDataType] = [
    .text, .textArray, .textArray, .float8Array, .bool, .float8,
  ]

  var name: String
  var submissions: [Submission]
  var restart: Bool
  var maxWaitMilliseconds: Double?

  /// One call of `delay`, encoded.
  struct Submission: Sendable {
    var key: String
    var json: String
    var delayMilliseconds: Double
  }

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 6)
    bindings.append(name)
    bindings.append(submissions.map(\.key))
    bindings.append(submissions.map(\.json))
    bindings.append(submissions.map(\.delayMilliseconds))
    bindings.append(restart)
    if let maxWaitMilliseconds {
      bindings.append(maxWaitMilliseconds)
    } else {
      bindings.appendNull()
    }
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// The channel on which submissions and flushes wake sleeping workers; the payload is the
/// queue's name.
let wakeChannel = "dpd_wake"

/// Claims up to `limit` due rows (waiting past their deadline, or running with an expired
/// lease), skipping rows that another replica is claiming at this moment. Each claim counts as
/// an attempt, when it is made, and takes a fence from the sequence `dpd_fence`. A row whose
/// lease ran out after its `maxAttempts`-th run (its worker died or lost the lease every time)
/// is kept as failed instead of run again: it comes back with `exhausted` set, and is not
/// claimed.
struct ClaimStatement: PostgresPreparedStatement {
  typealias Row = ClaimedBurst

  static let sql = """
    WITH due AS (
      SELECT key, claim IS NOT NULL AS taken_over FROM dpd_bursts
      WHERE name = $1 AND NOT failed AND due_at <= clock_timestamp()
      ORDER BY due_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    )
    UPDATE dpd_bursts AS b SET
      failed = \(exhausted),
      last_error = CASE WHEN \(exhausted) THEN 'its last run never ended (its worker died or lost its '
        || 'lease); ' || b.attempts || ' runs in all' ELSE b.last_error END,
      claim = CASE WHEN \(exhausted) THEN NULL ELSE gen_random_uuid() END,
      owner = CASE WHEN \(exhausted) THEN NULL ELSE $3 END,
      claimed_generation = CASE WHEN \(exhausted) THEN NULL ELSE b.generation END,
      fence = CASE WHEN \(exhausted) THEN b.fence ELSE nextval('dpd_fence') END,
      attempts = CASE WHEN \(exhausted) THEN b.attempts ELSE b.attempts + 1 END,
      due_at = CASE WHEN \(exhausted) THEN b.due_at
        ELSE clock_timestamp() + $4 * interval '1 millisecond' END
    FROM due WHERE b.name = $1 AND b.key = due.key
    RETURNING b.key, b.value::text, b.claim, b.attempts, b.fence, b.failed,
      due.taken_over,
      (extract(epoch FROM clock_timestamp() - b.deadline) * 1000)::float8
    """
  /// A run of this row began and never recorded its end `maxAttempts` times.
  private static let exhausted = "(b.claim IS NOT NULL AND b.attempts >= $5)"
  static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .text, .float8, .int8]

  var name: String
  var limit: Int
  var owner: String
  var leaseMilliseconds: Double
  var maxAttempts: Int

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 5)
    bindings.append(name)
    bindings.append(limit)
    bindings.append(owner)
    bindings.append(leaseMilliseconds)
    bindings.append(maxAttempts)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (key, json, claim, attempts, fence, exhausted, takenOver, lateness) = try row.decode(
      (String, String, UUID?, Int, Int64?, Bool, Bool, Double).self)
    return ClaimedBurst(
      key: key, json: json, claim: claim ?? UUID(), attempt: attempts, fence: fence ?? 0,
      exhausted: exhausted, takenOver: takenOver, latenessMilliseconds: lateness)
  }
}

/// One claimed row, as the worker runs it.
struct ClaimedBurst: Sendable {
  var key: String
  var json: String
  var claim: UUID
  /// The run's number: 1 for the burst's first run.
  var attempt: Int
  var fence: Int64
  /// Not claimed: kept as failed, its attempts spent on runs that never ended.
  var exhausted: Bool
  /// The row was claimed before, by a worker whose lease ran out.
  var takenOver: Bool
  /// From the burst's deadline to the claim, on the database's clock.
  var latenessMilliseconds: Double
}

/// The end of successful runs, in one batch: deletes each row whose generation did not move
/// since its claim, and releases the others as the waiting bursts that their submissions
/// started, which can be claimed only now (runs of one key never overlap). A claim that was
/// taken over (expired lease) matches nothing: the claims it returns are those whose end was
/// recorded. It locks its rows in key order first, as the renewal and the upsert do, so that
/// they cannot deadlock.
struct SucceededStatement: PostgresPreparedStatement {
  typealias Row = UUID

  static let sql = """
    WITH done AS (
      SELECT b.key, b.claim, b.generation = b.claimed_generation AS finished
      FROM dpd_bursts AS b, unnest($2::text[], $3::uuid[]) AS d(key, claim)
      WHERE b.name = $1 AND b.key = d.key AND b.claim = d.claim
      ORDER BY b.key
      FOR UPDATE OF b
    ), deleted AS (
      DELETE FROM dpd_bursts AS b USING done
      WHERE b.name = $1 AND b.key = done.key AND done.finished
      RETURNING done.claim
    ), released AS (
      UPDATE dpd_bursts AS b SET claim = NULL, owner = NULL, claimed_generation = NULL,
        attempts = 0, due_at = b.deadline
      FROM done
      WHERE b.name = $1 AND b.key = done.key AND NOT done.finished
      RETURNING done.claim
    )
    SELECT claim FROM deleted UNION ALL SELECT claim FROM released
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .textArray, .uuidArray]

  var name: String
  var keys: [String]
  var claims: [UUID]

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 3)
    bindings.append(name)
    bindings.append(keys)
    bindings.append(claims)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

/// The end of a run that threw: retry after an exponential backoff, or keep the row as failed
/// once it has had `maxAttempts` runs (the claim counted this one). A submission that arrived
/// during the run starts a new burst with its own attempts, as after a success. Returns
/// whether the row was kept as failed; no row when the claim was taken over.
struct FailedStatement: PostgresPreparedStatement {
  typealias Row = Bool

  static let sql = """
    UPDATE dpd_bursts SET claim = NULL, owner = NULL, claimed_generation = NULL,
      attempts = CASE WHEN \(sameBurst) THEN attempts ELSE 0 END,
      failed = \(sameBurst) AND attempts >= $4,
      last_error = $6,
      deadline = CASE WHEN \(sameBurst) THEN \(retryAt) ELSE deadline END,
      due_at = CASE WHEN \(sameBurst) THEN \(retryAt) ELSE deadline END
    WHERE name = $1 AND key = $2 AND claim = $3
    RETURNING failed
    """
  private static let sameBurst = "generation = claimed_generation"
  /// base × 2^(runs so far − 1), at most five minutes.
  private static let retryAt =
    "clock_timestamp() + least($5 * power(2, greatest(attempts - 1, 0)), 300000) "
    + "* interval '1 millisecond'"
  static let bindingDataTypes: [PostgresDataType] = [.text, .text, .uuid, .int8, .float8, .text]

  var name: String
  var key: String
  var claim: UUID
  var maxAttempts: Int
  var backoffMilliseconds: Double
  var error: String

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 6)
    bindings.append(name)
    bindings.append(key)
    bindings.append(claim)
    bindings.append(maxAttempts)
    bindings.append(backoffMilliseconds)
    bindings.append(error)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// Extends the leases of all the runs one worker holds, in one statement on the index on
/// `claim`, locking its rows in key order. Returns the claims it renewed: a claim missing from
/// the answer was taken over.
struct RenewStatement: PostgresPreparedStatement {
  typealias Row = UUID

  static let sql = """
    WITH held AS (
      SELECT key FROM dpd_bursts WHERE claim = ANY($2) AND name = $1
      ORDER BY key
      FOR UPDATE
    )
    UPDATE dpd_bursts AS b SET due_at = clock_timestamp() + $3 * interval '1 millisecond'
    FROM held WHERE b.name = $1 AND b.key = held.key
    RETURNING b.claim
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .uuidArray, .float8]

  var name: String
  var claims: [UUID]
  var leaseMilliseconds: Double

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 3)
    bindings.append(name)
    bindings.append(claims)
    bindings.append(leaseMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

/// Milliseconds from the database's now to the earliest instant a row may be claimed (a
/// deadline or a lease's expiry); nil when the queue has nothing to do.
struct NextDueStatement: PostgresPreparedStatement {
  typealias Row = Double?

  static let sql = """
    SELECT (extract(epoch FROM min(due_at) - clock_timestamp()) * 1000)::float8
    FROM dpd_bursts WHERE name = $1 AND NOT failed
    """
  static let bindingDataTypes: [PostgresDataType] = [.text]

  var name: String

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 1)
    bindings.append(name)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Double?.self) }
}
