import Foundation
import Logging
import PostgresNIO

// The SQL of the queue, one prepared statement per operation. Every instant comes from the
// database's `clock_timestamp()`, never from a replica's clock. Durations travel as
// milliseconds (float8). `$1` is always the queue's name.

/// `delay`: one upsert for a batch of submissions with distinct keys (one submission when the
/// queue is quiet; see `SubmissionBatcher`). It returns whether it woke the workers: only when
/// a new deadline is earlier than every deadline they know of, or when the earliest one is due
/// within `claimRaceMargin` (a worker may be claiming it right now), so that writers do not all
/// NOTIFY (a NOTIFY takes a database-wide lock at commit). Rows are upserted in key order, so
/// that concurrent batches lock rows in one order and cannot deadlock.
///
/// A row holds the key's bursts in order (see `Schema`): the head in `value`, the others in
/// `later`. A submission joins the newest burst when that one still takes submissions: it has
/// never been claimed (it neither runs nor waits for the retry of a run that threw), and has
/// fewer than `maxSubmissions` ($7). Otherwise it starts a new burst at
/// the end of `later`: behind a running head (runs of one key never overlap), behind a head that
/// waits for its retry (its value stays its own, P17), or behind a burst that reached
/// `maxSubmissions`, even one that no worker has claimed yet. Joining merges the value: the
/// new one replaces the burst's (`.replace`), or is appended to it with `jsonb` concatenation
/// (`.append`, $8), so a burst's array holds its submissions' arrays in submission order.
///
/// With `minimumSpacing` ($9, milliseconds; 0 for none), a waiting head is due no sooner than
/// the key's last run start plus the spacing: its deadline is still computed from its
/// submissions, and only `due_at` moves later. A row kept only for that spacing (`idle`) takes
/// a submission as a fresh burst. A kept failure of the key (in `dpd_failures`) is not in the
/// row: a submission never touches it.
///
/// This statement takes no trace context: nothing is stored per submission without a tracer.
/// It changes a row's trace records (`traces`, see `Schema`) only when a submission starts a
/// burst behind another, whose count it then fixes, or replaces an idle row. A batch in which a
/// submission carries a trace context is sent as ``TracedDelayStatement``,
/// which takes the contexts as `$10`.
struct DelayStatement: PostgresPreparedStatement {
  typealias Row = Bool

  /// A call of `dpd_submit`, whose body is ``upsertSQL(tracingContexts:)`` (see
  /// ``DatabaseFunctions``): the rules of submission exist once, in the database.
  static let sql = "SELECT dpd_submit($1, $2, $3, $4, $5, $6, $7, $8, $9)"

  /// The upsert, with the submissions' trace contexts as `$10` when `tracingContexts`.
  static func upsertSQL(tracingContexts: Bool) -> String {
    """
    WITH earliest AS (
      SELECT min(due_at) AS at FROM dpd_bursts WHERE name = $1 AND NOT failed AND NOT idle
    ), upserted AS (
      INSERT INTO dpd_bursts AS b (name, key, value, deadline, due_at, first_submitted\(
        tracingContexts ? ", traces" : ""))
      SELECT $1, s.key, s.value::jsonb,
        CASE WHEN $7 <= 1 THEN now.t
          ELSE now.t + least(greatest(s.delay, 0), $6) * interval '1 millisecond' END,
        CASE WHEN $7 <= 1 THEN now.t
          ELSE now.t + least(greatest(s.delay, 0), $6) * interval '1 millisecond' END,
        now.t\(tracingContexts ? insertedTraces : "")
      FROM \(tracingContexts
        ? "unnest($2::text[], $3::text[], $4::float8[], $10::text[]) AS s(key, value, delay, trace)"
        : "unnest($2::text[], $3::text[], $4::float8[]) AS s(key, value, delay)"),
        (SELECT clock_timestamp() AS t) AS now
      ORDER BY s.key
      ON CONFLICT (name, key) DO UPDATE SET
        value = CASE WHEN \(fresh) THEN excluded.value
          WHEN \(intoHead) THEN \(merged("b.value")) ELSE b.value END,
        later = CASE WHEN \(fresh) THEN '[]'::jsonb
          WHEN \(intoLast) THEN jsonb_set(b.later,
            ARRAY[(jsonb_array_length(b.later) - 1)::text], \(merged("(b.later -> -1)")))
          WHEN \(newBurst) THEN b.later || jsonb_build_array(excluded.value)
          ELSE b.later END,
        submissions = \(newestSubmissions),
        traces = \(tracingContexts ? mergedTraces : countedTraces),
        generation = b.generation + 1,
        first_submitted = CASE WHEN \(startsBurst) THEN excluded.first_submitted
          ELSE b.first_submitted END,
        deadline = \(newestDeadline),
        due_at = CASE WHEN \(fresh) OR \(intoHead)
          THEN greatest(\(newestDeadline), \(spacedFrom("$9"))) ELSE b.due_at END,
        attempts = CASE WHEN \(fresh) THEN 0 ELSE b.attempts END,
        last_error = CASE WHEN \(fresh) THEN NULL ELSE b.last_error END,
        failed = false,
        idle = false
      RETURNING b.due_at, b.claim IS NULL AS waiting
    )
    SELECT CASE WHEN EXISTS (
        SELECT 1 FROM upserted, earliest
        WHERE upserted.waiting AND (upserted.due_at < coalesce(earliest.at, 'infinity')
          OR earliest.at < clock_timestamp() + interval '\(claimRaceMargin)'))
      THEN (SELECT true FROM pg_notify('\(wakeChannel)', $1)) ELSE false END
    """
  }

  /// A submission also notifies when the earliest pending deadline is this close, or past. A
  /// worker about to claim that burst reads the next deadline right after its claim, from a
  /// snapshot that may not hold this submission yet, while this statement's snapshot may not
  /// hold the claim yet: neither side would wake the other, and the submission would wait for
  /// `safetyPoll`. A statement that takes longer than this margin can still miss, and then
  /// `safetyPoll` bounds the wait.
  static let claimRaceMargin = "250 milliseconds"

  /// The row holds no burst: a row kept only for the spacing (`idle`), or a failure kept by a
  /// replica of schema version 5 (`failed`; this version keeps none there). The submission
  /// makes it a fresh burst.
  private static let fresh = "(b.failed OR b.idle)"
  /// The newest burst has received `maxSubmissions`: it takes no more.
  private static let newestIsFull = "(b.submissions >= coalesce($7, 2147483647))"
  /// The head has been claimed: it runs, or it ran and waits for its retry (P17: a submission
  /// during the retry's backoff never joins the failed head, whose value stays its own).
  private static let headClaimed = "(b.claim IS NOT NULL OR b.attempts > 0)"
  /// The submission joins the head, which is the newest burst, waiting for its first run and not
  /// full.
  private static let intoHead =
    "(NOT \(fresh) AND NOT \(headClaimed) AND b.later = '[]'::jsonb AND NOT \(newestIsFull))"
  /// The submission joins the newest burst, which waits in `later` and is not full.
  private static let intoLast =
    "(NOT \(fresh) AND b.later <> '[]'::jsonb AND NOT \(newestIsFull))"
  /// The submission starts a new burst at the end of `later`: the head runs or waits for its
  /// retry and nothing waits behind it, or the newest burst is full.
  private static let newBurst = """
    (NOT \(fresh) AND ((\(headClaimed) AND b.later = '[]'::jsonb) OR \(newestIsFull)))
    """
  /// The submission starts a burst: a new one behind the others, or a fresh one that replaces
  /// a failure or an idle row.
  private static let startsBurst = "(\(fresh) OR \(newBurst))"
  /// The newest burst's submissions after this one.
  private static let newestSubmissions =
    "(CASE WHEN \(startsBurst) THEN 1 ELSE b.submissions + 1 END)"
  /// The newest burst's deadline: the instant it reached `maxSubmissions`, or as a deadline
  /// moves in-process.
  private static let newestDeadline = """
    (CASE WHEN \(newestSubmissions) >= coalesce($7, 2147483647) THEN excluded.first_submitted
      WHEN \(startsBurst) THEN excluded.deadline ELSE \(mergedDeadline) END)
    """
  /// The burst's value with the submission's merged in: replaced, or appended (`.append`).
  private static func merged(_ burst: String) -> String {
    "(CASE WHEN $8 THEN \(burst) || excluded.value ELSE excluded.value END)"
  }
  /// The inserted row's trace records: one with the submission's context, or none.
  private static let insertedTraces = """
    ,
        CASE WHEN s.trace = '' THEN '[]'::jsonb
          ELSE jsonb_build_array(jsonb_build_object('contexts', jsonb_build_array(s.trace::jsonb)))
        END
    """
  /// The trace records after a submission without a context: a fresh burst has none; a new
  /// burst fixes the count of the newest one, which stops taking submissions.
  private static let countedTraces = """
    (CASE WHEN \(fresh) THEN '[]'::jsonb WHEN \(newBurst) THEN \(newestCounted) ELSE b.traces END)
    """
  /// The trace records with the submission's (its context, if any, is `excluded.traces`' only
  /// one): a fresh burst has the submission's; a new burst fixes the count of the newest one,
  /// and adds its own record; joining the newest burst adds the context, keeping its first and newest
  /// contexts within `TraceCarrier.maximumPerBurst`.
  private static let mergedTraces = """
    (CASE WHEN \(fresh) THEN excluded.traces
      WHEN \(newBurst) THEN \(newestCounted) || excluded.traces
      WHEN excluded.traces = '[]'::jsonb THEN b.traces
      ELSE jsonb_set(b.traces, \(newestTracePath),
        \(newestTrace) || jsonb_build_object('contexts', \(boundedContexts))) END)
    """
  /// The trace records with the newest burst's count fixed in its record, unless the record
  /// has one already (a retried failure's, see `RetryFailuresStatement`).
  private static let newestCounted = """
    jsonb_set(b.traces, \(newestTracePath),
      jsonb_build_object('count', b.submissions) || \(newestTrace))
    """
  /// Where the newest burst's trace record is in `traces`.
  private static let newestTracePath = "ARRAY[jsonb_array_length(b.later)::text]"
  /// The newest burst's trace record; `{}` while nothing was stored for it.
  private static let newestTrace =
    "coalesce(b.traces -> jsonb_array_length(b.later), '{}'::jsonb)"
  /// The newest burst's contexts with the submission's: at the bound, the oldest but the first
  /// makes room.
  private static let boundedContexts = """
    (CASE WHEN jsonb_array_length(\(newestContexts)) < \(TraceCarrier.maximumPerBurst)
      THEN \(newestContexts) ELSE \(newestContexts) - 1 END
      || (excluded.traces -> 0 -> 'contexts'))
    """
  private static let newestContexts = "coalesce(\(newestTrace) -> 'contexts', '[]'::jsonb)"
  /// `.restart` sets the deadline, `.extend` only moves it later; `maxWait` bounds both.
  private static let mergedDeadline = """
    least(CASE WHEN $5 THEN excluded.deadline ELSE greatest(b.deadline, excluded.deadline) END,
      b.first_submitted + $6 * interval '1 millisecond')
    """

  static let bindingDataTypes: [PostgresDataType] = [
    .text, .textArray, .textArray, .float8Array, .bool, .float8, .int8, .bool, .float8,
  ]

  var name: String
  var submissions: [Submission]
  var restart: Bool
  var maxWaitMilliseconds: Double?
  var maxSubmissions: Int?
  var append: Bool
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0

  /// One call of `delay`, encoded.
  struct Submission: Sendable {
    var key: String
    var json: String
    var delayMilliseconds: Double
    /// The caller's trace context as JSON (``TraceCarrier``); "" for none.
    var traceContext: String = ""
  }

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 9)
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
    if let maxSubmissions {
      bindings.append(maxSubmissions)
    } else {
      bindings.appendNull()
    }
    bindings.append(append)
    bindings.append(minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }

  /// Sends the batch on `connection`, as ``TracedDelayStatement`` when a submission carries a
  /// trace context; returns whether it woke the workers.
  func send(on connection: PostgresConnection, logger: Logger) async throws -> Bool {
    if submissions.contains(where: { !$0.traceContext.isEmpty }) {
      return try await connection.rows(TracedDelayStatement(statement: self), logger: logger)
        .first ?? false
    }
    return try await connection.rows(self, logger: logger).first ?? false
  }
}

/// ``DelayStatement`` for a batch in which a submission carries a trace context: the same
/// upsert, which also stores each submission's context (`$10`, "" for none) in the trace record
/// of the burst it joins or starts. A separate statement, so that a batch without contexts
/// (every batch, without a tracer) sends and evaluates none of it.
struct TracedDelayStatement: PostgresPreparedStatement {
  typealias Row = Bool

  static let sql = "SELECT dpd_submit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
  static let bindingDataTypes = DelayStatement.bindingDataTypes + [.textArray]

  var statement: DelayStatement

  func makeBindings() -> PostgresBindings {
    var bindings = statement.makeBindings()
    bindings.append(statement.submissions.map(\.traceContext))
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try statement.decodeRow(row) }
}

/// `cancel`: a call of `dpd_cancel` (``DatabaseFunctions``), whose body is ``rules(name:key:spacing:)``.
/// It cancels the key's pending bursts: a waiting head (with the bursts behind it) is deleted, or
/// kept `idle` when the key's last run started within `minimumSpacing` ($3, milliseconds), so
/// that the row remembers that start; the bursts waiting behind a running head are dropped, and
/// the head's trace record is left alone. Returns whether there was one.
struct CancelStatement: PostgresPreparedStatement {
  typealias Row = Bool

  static let sql = "SELECT dpd_cancel($1, $2, $3 * interval '1 millisecond')"
  static let bindingDataTypes: [PostgresDataType] = [.text, .text, .float8]

  var name: String
  var key: String
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double

  /// The statement of the rules, with the SQL expressions of the queue's name, the key and the
  /// spacing in milliseconds; it selects the number of rows it changed.
  static func rules(name: String, key: String, spacing: String) -> String {
    """
    WITH cancelled AS (
        SELECT key, last_start + \(spacing) * interval '1 millisecond' AS spaced_until,
          coalesce(last_start + \(spacing) * interval '1 millisecond' > clock_timestamp(), false)
            AS rests
        FROM dpd_bursts
        WHERE name = \(name) AND key = \(key) AND claim IS NULL AND NOT failed AND NOT idle
        FOR UPDATE
      ), waiting AS (
        DELETE FROM dpd_bursts AS b USING cancelled AS c
        WHERE b.name = \(name) AND b.key = c.key AND NOT c.rests RETURNING 1
      ), rested AS (
        UPDATE dpd_bursts AS b SET idle = true, value = 'null'::jsonb, later = '[]'::jsonb,
          submissions = 0, attempts = 0, last_error = NULL, due_at = c.spaced_until,
          traces = '[]'::jsonb
        FROM cancelled AS c
        WHERE b.name = \(name) AND b.key = c.key AND c.rests RETURNING 1
      ), behind AS (
        UPDATE dpd_bursts SET claimed_generation = generation, later = '[]'::jsonb,
          \(headAloneAgain)
        WHERE name = \(name) AND key = \(key) AND claim IS NOT NULL
          AND later <> '[]'::jsonb
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM waiting) + (SELECT count(*) FROM rested)
        + (SELECT count(*) FROM behind)
    """
  }

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 3)
    bindings.append(name)
    bindings.append(key)
    bindings.append(minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// `flush`: a call of `dpd_flush` (``DatabaseFunctions``), whose body is ``rules(name:key:)``.
/// It makes the key's pending bursts due now and lifts `minimumSpacing` for its next run; a
/// burst behind a running head becomes due when that run ends. It wakes the workers when there
/// was one, and returns whether there was one.
struct FlushStatement: PostgresPreparedStatement {
  typealias Row = Bool

  static let sql = "SELECT dpd_flush($1, $2)"
  static let bindingDataTypes: [PostgresDataType] = [.text, .text]

  var name: String
  var key: String

  /// The statement of the rules, with the SQL expressions of the queue's name and the key; it
  /// selects whether it flushed a burst.
  static func rules(name: String, key: String) -> String {
    """
    WITH flushed AS (
        UPDATE dpd_bursts SET deadline = clock_timestamp(), last_start = NULL,
          due_at = CASE WHEN claim IS NULL THEN clock_timestamp() ELSE due_at END
        WHERE name = \(name) AND key = \(key) AND NOT failed AND NOT idle
          AND (claim IS NULL OR later <> '[]'::jsonb)
        RETURNING 1
      )
      SELECT CASE WHEN EXISTS (SELECT 1 FROM flushed)
        THEN (SELECT true FROM pg_notify('\(wakeChannel)', \(name))) ELSE false END
    """
  }

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 2)
    bindings.append(name)
    bindings.append(key)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// When the burst behind the head (`later -> 0`) becomes due, as it becomes the head: at once
/// if more bursts wait behind it (it reached `maxSubmissions`), else at the newest burst's
/// deadline (which is the instant it reached `maxSubmissions`, if it did).
let nextHeadDue = """
  (CASE WHEN jsonb_array_length(b.later) > 1 THEN clock_timestamp() ELSE b.deadline END)
  """

/// The earliest instant at which the key's next run may start under `minimumSpacing` (the
/// placeholder `spacing`, in milliseconds): its last run's start plus the spacing, on the
/// database's clock. Null when the key has no last start (no run yet, or a flush lifted the
/// spacing): `greatest` ignores it then. `row` is the alias of the row in `dpd_bursts`.
func spacedFrom(_ spacing: String, row: String = "b") -> String {
  "(\(row).last_start + \(spacing) * interval '1 millisecond')"
}

/// The assignments that leave a row's head alone, when `cancel` drops the bursts behind it: its
/// trace record is the only one left, and its count, kept in that record since a burst behind
/// it started, is the newest burst's count (`submissions`) again.
let headAloneAgain = """
  submissions = coalesce((traces -> 0 ->> 'count')::int, submissions),
  traces = CASE WHEN traces = '[]'::jsonb THEN traces
    ELSE jsonb_build_array((traces -> 0) - 'count') END
  """

/// The trace record of a row's head as its kept failure stores it (`dpd_failures.traces`): the
/// head's record with its submission count fixed, which is in the record once a burst behind
/// it started, else the row's `submissions`. `row` is the alias of the row of `dpd_bursts`.
func keptTraceRecord(_ row: String) -> String {
  """
  (jsonb_build_object('count', CASE WHEN \(row).later = '[]'::jsonb THEN \(row).submissions
    ELSE 1 END) || coalesce(\(row).traces -> 0, '{}'::jsonb))
  """
}

/// The channel on which submissions and flushes wake sleeping workers; the payload is the
/// queue's name.
let wakeChannel = "dpd_wake"

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
/// A claim starts a run: it sets `last_start` (which the run's recorded end moves to its
/// handler's start). Under `minimumSpacing` ($6, milliseconds) a claimed row's lease ends no
/// sooner than the spacing from the claim, so that a takeover (a run too) keeps the spacing as
/// well; the burst behind an exhausted head is due no sooner than the spacing from the lost
/// run's claim. The rows kept only for the spacing (`idle`) are never
/// claimed: the claim deletes those whose spacing has passed, a few more than it claims, so that
/// they are gone soon after their spacing while any worker runs. The lateness it returns counts
/// from the deadline, or from the end of the spacing when that is later.
///
/// It also returns the head's trace
/// record for the run's span: its stored contexts, and its submission count (kept in the record
/// once a burst behind it started, else the row's `submissions`; 1 when neither is known, for a
/// burst stored before schema version 5 with bursts behind it).
struct ClaimStatement: PostgresPreparedStatement {
  typealias Row = ClaimedBurst

  static let sql = """
    WITH due AS (
      SELECT key, claim IS NOT NULL AS taken_over, last_start,
        claim IS NOT NULL AND attempts >= $5 AS exhausted, attempts, value, later, submissions,
        traces
      FROM dpd_bursts
      WHERE name = $1 AND NOT failed AND NOT idle AND due_at <= clock_timestamp()
      ORDER BY due_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ), kept AS (
      INSERT INTO dpd_failures (name, key, value, attempts, last_error, traces)
      SELECT $1, due.key, due.value, due.attempts,
        'its last run never ended (its worker died or lost its lease); ' || due.attempts
          || ' runs in all', \(keptTraceRecord("due"))
      FROM due WHERE due.exhausted
      ORDER BY due.key
    ), expired AS (
      SELECT key FROM dpd_bursts
      WHERE name = $1 AND idle AND due_at <= clock_timestamp()
      ORDER BY due_at
      LIMIT $2 * 2 + 100
      FOR UPDATE SKIP LOCKED
    ), swept AS (
      DELETE FROM dpd_bursts AS i USING expired WHERE i.name = $1 AND i.key = expired.key
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
      last_start = CASE WHEN \(exhausted) THEN b.last_start ELSE clock_timestamp() END,
      due_at = CASE WHEN \(givesWay) THEN greatest(\(nextHeadDue), \(spacedFrom("$6")))
        WHEN \(exhausted) THEN greatest(clock_timestamp(), \(spacedFrom("$6")))
        ELSE clock_timestamp() + greatest($4, $6) * interval '1 millisecond' END
    FROM due WHERE b.name = $1 AND b.key = due.key
    RETURNING b.key, b.value::text, b.claim,
      CASE WHEN b.claim IS NULL THEN due.attempts ELSE b.attempts END, b.fence,
      b.claim IS NULL AND b.idle,
      due.taken_over,
      (extract(epoch FROM clock_timestamp()
        - greatest(b.deadline, \(spacedFrom("$6", row: "due")))) * 1000)::float8,
      (b.traces -> 0 -> 'contexts')::text,
      coalesce((b.traces -> 0 ->> 'count')::int8,
        CASE WHEN b.later = '[]'::jsonb THEN b.submissions ELSE 1 END)
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
    let (key, json, claim, attempts, fence, exhausted, takenOver, lateness, contexts, count) =
      try row.decode((String, String, UUID?, Int, Int64?, Bool, Bool, Double, String?, Int).self)
    return ClaimedBurst(
      key: key, json: json, claim: claim ?? UUID(), attempt: attempts, fence: fence ?? 0,
      exhausted: exhausted, gaveWay: claim == nil && !exhausted, takenOver: takenOver,
      latenessMilliseconds: lateness, submissions: count, traceContexts: contexts)
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
  /// Not claimed: kept in `dpd_failures`, its attempts spent on runs that never ended; no burst
  /// of its key waits.
  var exhausted: Bool
  /// Not claimed: kept in `dpd_failures`, its attempts spent on runs that never ended; the
  /// burst behind it is the head now, and a later claim runs it.
  var gaveWay: Bool
  /// The row was claimed before, by a worker whose lease ran out.
  var takenOver: Bool
  /// From the burst's deadline to the claim, on the database's clock.
  var latenessMilliseconds: Double
  /// How many submissions the burst received.
  var submissions: Int = 1
  /// The trace contexts stored with its submissions (a JSON array of ``TraceCarrier``s); nil
  /// when none was stored.
  var traceContexts: String? = nil
  /// When the run's handler started, on the worker's clock; nil while it has not (or when it
  /// never did: its value did not decode). The run's end moves `last_start` from the claim to
  /// this instant (see `handlerStart(since:)`), so that `minimumSpacing` counts from the
  /// handler's start.
  var handlerStarted: ContinuousClock.Instant?
  /// The stored value did not decode as the queue's `Value`: the run is kept as a failure at
  /// once, never retried (rule P15).
  var valueDoesNotDecode = false

  /// Milliseconds from the handler's start to now, as the end's statements take it: -1 when the
  /// handler did not start.
  var millisecondsSinceHandlerStart: Double {
    handlerStarted.map { (ContinuousClock.now - $0).milliseconds } ?? -1
  }
}

/// The start of a run whose end is being recorded, on the database's clock: the database's now
/// minus `since`, the milliseconds from the handler's start to the moment the statement was
/// made on the worker (the statement runs after that moment, so this instant is no earlier than
/// the handler's start), and never before the claim (`b.last_start`). The claim's instant when
/// the handler did not start (`since` < 0); null when a flush lifted the spacing.
func handlerStart(since: String) -> String {
  """
  (CASE WHEN b.last_start IS NULL THEN NULL WHEN \(since) < 0 THEN b.last_start
    ELSE greatest(b.last_start, clock_timestamp() - \(since) * interval '1 millisecond') END)
  """
}

/// The end of successful runs, in one batch: deletes each row with no burst behind its head,
/// and makes the next burst the head of the others (the submissions during the run, or after a
/// burst reached `maxSubmissions`, run after it: runs of one key never overlap). A claim that
/// was taken over (expired lease), or whose end an earlier attempt of this statement already
/// recorded, matches nothing: the claims it returns are those whose end this statement
/// recorded. It locks its rows in key order first, as the renewal and the upsert do, so that
/// they cannot deadlock.
///
/// Every new value is computed in `done`, from the row as it was locked, never in the
/// `UPDATE`: a submission that committed after this statement's snapshot was taken, and before
/// the lock, changes the row the lock returns, while the `UPDATE` first forms its new row from
/// the snapshot's version. PostgreSQL checks `NOT NULL` on that first form, before it rereads
/// the locked row, so `value = b.later -> 0` on a snapshot whose `later` was still empty
/// failed with SQLSTATE 23502 (`PostgresUnconfirmedTests` makes that happen on purpose).
///
/// The run's start (`last_start`) moves from its claim to its handler's start (`handlerStart`;
/// $5 holds each claim's milliseconds since its handler started). Under `minimumSpacing` ($4,
/// milliseconds; 0 for none) the next burst is due no sooner than the spacing from that start,
/// and a row with no burst left is not deleted while that spacing lasts: it is kept `idle`, its
/// value dropped, due (for the claim that deletes it) when the spacing ends. Whether a row rests
/// is decided once, in `done`, so that the deletion and the update agree on one instant.
struct SucceededStatement: PostgresPreparedStatement {
  typealias Row = UUID

  static let sql = """
    WITH done AS (
      SELECT b.key, b.claim, b.later = '[]'::jsonb AS finished,
        b.later -> 0 AS next_value, b.later - 0 AS next_later, \(started) AS started,
        b.traces - 0 AS next_traces,
        greatest(\(nextHeadDue), \(spacedUntil)) AS next_due, \(spacedUntil) AS spaced_until,
        $4 > 0 AND coalesce(\(spacedUntil) > clock_timestamp(), false) AS rests
      FROM dpd_bursts AS b,
        unnest($2::text[], $3::uuid[], $5::float8[]) AS d(key, claim, since_start)
      WHERE b.name = $1 AND b.key = d.key AND b.claim = d.claim
      ORDER BY b.key
      FOR UPDATE OF b
    ), deleted AS (
      DELETE FROM dpd_bursts AS b USING done
      WHERE b.name = $1 AND b.key = done.key AND done.finished AND NOT done.rests
      RETURNING done.claim
    ), rested AS (
      UPDATE dpd_bursts AS b SET claim = NULL, owner = NULL, claimed_generation = NULL,
        attempts = 0, last_error = NULL, value = 'null'::jsonb, submissions = 0, idle = true,
        traces = '[]'::jsonb,
        last_start = done.started, due_at = done.spaced_until
      FROM done
      WHERE b.name = $1 AND b.key = done.key AND done.finished AND done.rests
      RETURNING done.claim
    ), released AS (
      UPDATE dpd_bursts AS b SET claim = NULL, owner = NULL, claimed_generation = NULL,
        attempts = 0, value = done.next_value, later = done.next_later, due_at = done.next_due,
        traces = done.next_traces, last_start = done.started
      FROM done
      WHERE b.name = $1 AND b.key = done.key AND NOT done.finished
      RETURNING done.claim
    )
    SELECT claim FROM deleted UNION ALL SELECT claim FROM rested
    UNION ALL SELECT claim FROM released
    """
  private static let started = handlerStart(since: "d.since_start")
  private static let spacedUntil = "(\(started) + $4 * interval '1 millisecond')"
  static let bindingDataTypes: [PostgresDataType] = [
    .text, .textArray, .uuidArray, .float8, .float8Array,
  ]

  var name: String
  var keys: [String]
  var claims: [UUID]
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0
  /// Each claim's `ClaimedBurst.millisecondsSinceHandlerStart`; empty: -1 for each.
  var millisecondsSinceHandlerStarts: [Double] = []

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 5)
    bindings.append(name)
    bindings.append(keys)
    bindings.append(claims)
    bindings.append(minimumSpacingMilliseconds)
    bindings.append(
      millisecondsSinceHandlerStarts.count == claims.count
        ? millisecondsSinceHandlerStarts : Array(repeating: -1, count: claims.count))
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

/// Releases the claims that this worker (`owner`, unique to one `run`) holds in the database but
/// does not know of: those of a claim statement that was applied but whose answer was lost (a
/// restart ended the session, or no answer came in time). `known` is every claim the worker
/// knows it holds; a row claimed by `owner` under any other claim never ran here, so it becomes
/// due again at once, and its attempt is given back. A row that another worker took over meanwhile
/// has another owner and is left alone. Returns the keys it released.
struct ReleaseUnknownClaimsStatement: PostgresPreparedStatement {
  typealias Row = String

  static let sql = """
    UPDATE dpd_bursts SET claim = NULL, owner = NULL, claimed_generation = NULL,
      attempts = greatest(attempts - 1, 0), due_at = least(due_at, clock_timestamp())
    WHERE name = $1 AND owner = $2 AND claim IS NOT NULL AND NOT (claim = ANY($3))
    RETURNING key
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .text, .uuidArray]

  var name: String
  var owner: String
  var known: [UUID]

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 3)
    bindings.append(name)
    bindings.append(owner)
    bindings.append(known)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(String.self) }
}

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
      SELECT b.key, b.value, b.attempts, \(keptTraceRecord("b")) AS kept_trace,
        \(spent) AS spent, b.later = '[]'::jsonb AS alone,
        b.later <> '[]'::jsonb AND NOT $7 AND NOT \(spent) AS gives_way,
        b.later -> 0 AS next_value, b.later - 0 AS next_later, b.traces - 0 AS next_traces,
        CASE WHEN b.later = '[]'::jsonb THEN \(retryAt) ELSE b.deadline END AS retry_deadline,
        greatest(\(retryAt), \(spacedUntil)) AS retry_due,
        greatest(\(nextHeadDue), \(spacedUntil)) AS next_due,
        \(started) AS started, \(spacedUntil) AS spaced_until,
        $8 > 0 AND coalesce(\(spacedUntil) > clock_timestamp(), false) AS rests
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
      UPDATE dpd_bursts AS b SET claim = NULL, owner = NULL, claimed_generation = NULL,
        attempts = 0, last_error = NULL, value = 'null'::jsonb, submissions = 0, idle = true,
        traces = '[]'::jsonb, last_start = ended.started, due_at = ended.spaced_until
      FROM ended
      WHERE b.name = $1 AND b.key = ended.key AND ended.spent AND ended.alone AND ended.rests
      RETURNING 1 AS outcome
    ), next AS (
      UPDATE dpd_bursts AS b SET claim = NULL, owner = NULL, claimed_generation = NULL,
        attempts = 0, last_error = NULL, value = ended.next_value, later = ended.next_later,
        traces = ended.next_traces, due_at = ended.next_due, last_start = ended.started
      FROM ended
      WHERE b.name = $1 AND b.key = ended.key AND NOT ended.alone
        AND (ended.spent OR ended.gives_way)
      RETURNING CASE WHEN ended.spent THEN 1 ELSE 2 END AS outcome
    ), retried AS (
      UPDATE dpd_bursts AS b SET claim = NULL, owner = NULL, claimed_generation = NULL,
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
    "clock_timestamp() + least($5 * power(2, greatest(b.attempts - 1, 0)), 300000) "
    + "* interval '1 millisecond'"
  private static let started = handlerStart(since: "$9")
  /// The end of `minimumSpacing` after the failed run's start.
  private static let spacedUntil = "(\(started) + $8 * interval '1 millisecond')"
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

/// `retryFailure`: takes the kept failures that a condition on `$2` picks (a key, or an id) out of
/// `dpd_failures` and makes them bursts of their key again, oldest first (P17), in one statement:
/// a concurrent retry of the same failure finds it gone, so none runs twice for one kept failure.
/// Returns how many it retried, and wakes the workers when there was one.
///
/// The retried bursts are put in the key's row without being merged with any burst: with no row
/// (or an `idle` one, whose `last_start` stays), they make a fresh row, the first one due now
/// (no sooner than the spacing, $3 in milliseconds, after the key's last run start); when the
/// head has been claimed (it runs, or waits for its retry), they go right behind it, before the
/// bursts that wait; when the head waits for its first run, they go before it, the first one due
/// now, and the head keeps its deadline. Bursts that are not the newest are due at once when
/// they become the head, as bursts that reached `maxSubmissions` are. A retried burst takes no
/// submissions: when it is the newest, the row's `submissions` is the largest `int4`, so that
/// every `maxSubmissions` counts it full, and a submission starts a new burst behind it. Its trace
/// record is the one it was kept with, its count fixed there.
enum RetryFailuresStatement {
  /// The statement, with `condition` (on `dpd_failures`, for example `key = $2`).
  static func sql(selecting condition: String) -> String {
    """
    WITH taken AS (
      DELETE FROM dpd_failures WHERE name = $1 AND \(condition)
      RETURNING id, key, value, traces
    ), retried AS (
      SELECT key, jsonb_agg(value ORDER BY id) AS bursts, jsonb_agg(traces ORDER BY id) AS records
      FROM taken GROUP BY key
    ), upserted AS (
      INSERT INTO dpd_bursts AS b (name, key, value, later, deadline, due_at, first_submitted,
        submissions, traces)
      SELECT $1, r.key, r.bursts -> 0, r.bursts - 0, now.t, now.t, now.t, \(takesNoSubmissions),
        r.records
      FROM retried AS r, (SELECT clock_timestamp() AS t) AS now
      ORDER BY r.key
      ON CONFLICT (name, key) DO UPDATE SET
        value = CASE WHEN \(claimed) THEN b.value ELSE excluded.value END,
        later = CASE WHEN \(fresh) THEN excluded.later
          WHEN \(claimed) THEN \(allRetried) || b.later
          ELSE excluded.later || jsonb_build_array(b.value) || b.later END,
        traces = CASE WHEN \(fresh) THEN excluded.traces
          WHEN \(claimed) THEN jsonb_build_array(\(keptTraceRecord("b"))) || excluded.traces
            || (b.traces - 0)
          ELSE excluded.traces || b.traces END,
        submissions = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb)
          THEN excluded.submissions ELSE b.submissions END,
        deadline = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb)
          THEN excluded.deadline ELSE b.deadline END,
        first_submitted = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb)
          THEN excluded.first_submitted ELSE b.first_submitted END,
        due_at = CASE WHEN \(claimed) THEN b.due_at
          ELSE greatest(excluded.due_at, \(spacedFrom("$3"))) END,
        attempts = CASE WHEN \(claimed) THEN b.attempts ELSE 0 END,
        last_error = CASE WHEN \(claimed) THEN b.last_error ELSE NULL END,
        generation = b.generation + 1,
        failed = false,
        idle = false
      RETURNING 1
    )
    SELECT CASE WHEN EXISTS (SELECT 1 FROM upserted)
      THEN (SELECT count(*) FROM taken) + (SELECT 0 FROM pg_notify('\(wakeChannel)', $1))
      ELSE 0 END
    """
  }

  /// The largest `int4`: a newest burst with this many submissions takes no more.
  static let takesNoSubmissions = "2147483647"
  /// The row holds no burst: a row kept only for the spacing, or a failure kept by a replica of
  /// schema version 5 (see `DelayStatement`).
  private static let fresh = "(b.failed OR b.idle)"
  /// The head has been claimed: it runs, or waits for its retry.
  private static let claimed = "(NOT \(fresh) AND (b.claim IS NOT NULL OR b.attempts > 0))"
  /// Every retried burst, oldest first.
  private static let allRetried = "(jsonb_build_array(excluded.value) || excluded.later)"
}

/// Extends the leases of all the runs one worker holds, in one statement on the index on
/// `claim`, locking its rows in key order. Returns the claims it renewed: a claim missing from
/// the answer was taken over. Under `minimumSpacing` ($4) a lease ends no sooner than the spacing
/// from the run's start, as the claim set it: a takeover is a run, and keeps the spacing too.
struct RenewStatement: PostgresPreparedStatement {
  typealias Row = UUID

  static let sql = """
    WITH held AS (
      SELECT key FROM dpd_bursts WHERE claim = ANY($2) AND name = $1
      ORDER BY key
      FOR UPDATE
    )
    UPDATE dpd_bursts AS b SET due_at = greatest(
        clock_timestamp() + $3 * interval '1 millisecond', \(spacedFrom("$4")))
    FROM held WHERE b.name = $1 AND b.key = held.key
    RETURNING b.claim
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .uuidArray, .float8, .float8]

  var name: String
  var claims: [UUID]
  var leaseMilliseconds: Double
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 4)
    bindings.append(name)
    bindings.append(claims)
    bindings.append(leaseMilliseconds)
    bindings.append(minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

/// Milliseconds from the database's now to the earliest instant a row may be claimed (a
/// deadline or a lease's expiry); nil when the queue has nothing to do. Rows kept only for the
/// spacing (`idle`) are no work: a claim deletes them, and the worker's `safetyPoll` bounds how
/// long they wait for it.
struct NextDueStatement: PostgresPreparedStatement {
  typealias Row = Double?

  static let sql = """
    SELECT (extract(epoch FROM min(due_at) - clock_timestamp()) * 1000)::float8
    FROM dpd_bursts WHERE name = $1 AND NOT failed AND NOT idle
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

/// Statements of the package in the form its benchmark needs (dpd-postgres-bench).
package enum BenchmarkStatements {
  /// `delay`'s statement as a pgbench script for one submission per transaction: the same SQL,
  /// with the bindings of a single-row batch written in (queue `name`, a fresh key per
  /// transaction drawn into pgbench's `:k`, the value `1`, a one-hour delay, `.extend`, no
  /// `maxWait`, no `maxSubmissions`, `.replace`, no `minimumSpacing`; without a trace context,
  /// as without a tracer). The benchmark prints it so that pgbench runs the statement the
  /// package sends, not a copy that could drift from it.
  package static func pgbenchScript(name: String) -> String {
    precondition(
      name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" },
      "BenchmarkStatements.pgbenchScript: name must be letters, digits, '-' or '_', got \(name)")
    let bindings = [
      "$1": "'\(name)'::text", "$2": "ARRAY['k' || :k]::text[]", "$3": "ARRAY['1']::text[]",
      "$4": "ARRAY[3600000]::float8[]", "$5": "false", "$6": "NULL::float8",
      "$7": "NULL::int8", "$8": "false", "$9": "0::float8",
    ]
    var script = DelayStatement.sql
    // $1 to $9 only: no placeholder is a prefix of another.
    for (placeholder, literal) in bindings {
      script = script.replacingOccurrences(of: placeholder, with: literal)
    }
    return "\\set k random(1, 1000000000)\n" + script + ";\n"
  }
}

/// `migrate()`'s second statement: stores the queue's options under its name in `dpd_queues`,
/// for `dpd_delay` (rule P15; the last replica to migrate wins), and returns the options stored
/// before, if any, so that a replica whose options differ can say so.
struct StoreOptionsStatement: PostgresPreparedStatement {
  typealias Row = StoredOptions

  static let sql = """
    WITH previous AS (
      SELECT deadline_policy, max_wait_ms, max_submissions, merge, minimum_spacing_ms
      FROM dpd_queues WHERE name = $1
      FOR UPDATE
    ), stored AS (
      INSERT INTO dpd_queues AS q (name, deadline_policy, max_wait_ms, max_submissions, merge,
        minimum_spacing_ms, migrated_at)
      VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())
      ON CONFLICT (name) DO UPDATE SET deadline_policy = excluded.deadline_policy,
        max_wait_ms = excluded.max_wait_ms, max_submissions = excluded.max_submissions,
        merge = excluded.merge, minimum_spacing_ms = excluded.minimum_spacing_ms,
        migrated_at = excluded.migrated_at
    )
    SELECT deadline_policy, max_wait_ms, max_submissions, merge, minimum_spacing_ms FROM previous
    """
  static let bindingDataTypes: [PostgresDataType] = [
    .text, .text, .float8, .int8, .text, .float8,
  ]

  var name: String
  var options: StoredOptions

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 6)
    bindings.append(name)
    bindings.append(options.deadlinePolicy)
    if let maxWait = options.maxWaitMilliseconds {
      bindings.append(maxWait)
    } else {
      bindings.appendNull()
    }
    if let maxSubmissions = options.maxSubmissions {
      bindings.append(maxSubmissions)
    } else {
      bindings.appendNull()
    }
    bindings.append(options.merge)
    bindings.append(options.minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (policy, maxWait, maxSubmissions, merge, spacing) = try row.decode(
      (String, Double?, Int?, String, Double).self)
    return StoredOptions(
      deadlinePolicy: policy, maxWaitMilliseconds: maxWait, maxSubmissions: maxSubmissions,
      merge: merge, minimumSpacingMilliseconds: spacing)
  }
}

/// A queue's options as `dpd_queues` stores them, and as `dpd_delay` reads them.
struct StoredOptions: Sendable, Hashable, CustomStringConvertible {
  /// `extend` or `restart`.
  var deadlinePolicy: String
  var maxWaitMilliseconds: Double?
  var maxSubmissions: Int?
  /// `replace` or `append`.
  var merge: String
  /// 0 for none.
  var minimumSpacingMilliseconds: Double

  var description: String {
    "deadlinePolicy \(deadlinePolicy), maxWait "
      + (maxWaitMilliseconds.map { "\($0) ms" } ?? "none") + ", maxSubmissions "
      + (maxSubmissions.map { "\($0)" } ?? "none") + ", merge \(merge), minimumSpacing "
      + "\(minimumSpacingMilliseconds) ms"
  }
}
