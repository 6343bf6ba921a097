import Foundation
import Logging
import PostgresNIO

/// `delay`: one upsert for a batch of submissions with distinct keys (one submission when the
/// queue is quiet; see `SubmissionBatcher`). It returns whether it woke the workers: only when
/// a new deadline is earlier than every deadline they know of, or when the earliest one is due
/// within `claimRaceMargin` (a worker may be claiming it right now), so that writers do not all
/// NOTIFY (a NOTIFY takes a database-wide lock at commit). Rows are upserted in key order, so
/// that concurrent batches lock rows in one order and cannot deadlock.
///
/// A row holds the key's bursts in order (see `Schema`): the head in `value`, the others in
/// `later`. A submission joins the newest burst when that one still takes submissions: it has
/// never been claimed (it neither runs nor waits for the retry of a run that threw), has
/// fewer than `maxSubmissions` ($7), was not ended by a `flush`, and, when it is the head, is
/// not due yet. The submission that brings a burst to `maxSubmissions` (its call's) seals it
/// (`sealed`, see `Schema`): it is closed, a decided run that `cancel` and `flush` leave alone,
/// and takes no more submissions, also from a call with a larger `maxSubmissions`. Otherwise it
/// starts a new burst at the end of `later`: behind a running head (runs of one key never
/// overlap), behind a head that waits for its retry (its value stays its own, P17), behind a
/// burst that reached `maxSubmissions`, even one that no worker has claimed yet, or behind a
/// head that is due and waits only for a worker's claim (T7: due means due, so what runs does
/// not depend on how late the claim is). Joining merges the value: the
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
struct DelayStatement: CommittingStatement {
  typealias Row = Bool

  /// A call of `dpd_submit`, whose body is ``upsertSQL(tracingContexts:single:)`` (see
  /// ``DatabaseFunctions``): the rules of submission exist once, in the database. Sent as it is
  /// on a caller's connection, in the caller's transaction.
  static let sql = "SELECT dpd_submit($1, $2, $3, $4, $5, $6, $7, $8, $9)"
  /// The same call through `dpd_submit_committed`, which commits before it answers: the queue's
  /// own `delay` (see ``CommittingStatement``).
  static let committedSQL =
    "CALL dpd_submit_committed($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL)"
  static let committedName = "dpd.committed.delay"

  /// The upsert, with the submissions' trace contexts as `$10` when `tracingContexts`.
  ///
  /// `single`: the form for a call of one submission without a trace context (a quiet queue's
  /// `delay`, and `dpd_delay` from SQL), which reads the submission from the arrays' first
  /// elements instead of unnesting and sorting them: the database builds and starts a smaller
  /// plan at every execution (about 25,000 fewer server instructions of some 540,000, measured
  /// with `scripts/postgres-instructions.sh`'s method). The rules are the same text.
  static func upsertSQL(tracingContexts: Bool, single: Bool = false) -> String {
    """
    WITH earliest AS (
      SELECT min(due_at) AS at FROM dpd_bursts WHERE name = $1 AND \(SQLFragment.holdsWork)
    ), upserted AS (
      \(insert(tracingContexts: tracingContexts, single: single))
      ON CONFLICT (name, key) DO UPDATE SET
        value = CASE WHEN \(fresh) THEN excluded.value
          WHEN \(startsBehind) OR b.later <> '[]'::jsonb THEN b.value
          ELSE \(merged("b.value")) END,
        later = CASE WHEN \(fresh) THEN '[]'::jsonb
          WHEN \(startsBehind) THEN b.later || jsonb_build_array(excluded.value)
          WHEN b.later <> '[]'::jsonb THEN jsonb_set(b.later,
            ARRAY[(jsonb_array_length(b.later) - 1)::text], \(merged("(b.later -> -1)")))
          ELSE b.later END,
        submissions = CASE WHEN \(fresh) OR \(startsBehind) THEN 1 ELSE b.submissions + 1 END,
        traces = \(tracingContexts ? mergedTraces : countedTraces),
        generation = b.generation + 1,
        first_submitted = CASE WHEN \(fresh) OR \(startsBehind) THEN excluded.first_submitted
          ELSE b.first_submitted END,
        deadline = CASE WHEN \(fresh) OR \(startsBehind) THEN excluded.deadline
          ELSE \(joinedDeadline) END,
        due_at = CASE WHEN \(fresh) THEN greatest(excluded.deadline, \(spaced))
          WHEN \(startsBehind) OR b.later <> '[]'::jsonb THEN b.due_at
          ELSE greatest(\(joinedDeadline), \(spaced)) END,
        sealed = CASE WHEN \(fresh) OR \(startsBehind) THEN excluded.sealed
          ELSE b.submissions + 1 >= \(cap) END,
        attempts = CASE WHEN \(fresh) THEN 0 ELSE b.attempts END,
        last_error = CASE WHEN \(fresh) THEN NULL ELSE b.last_error END,
        failed = false,
        idle = false
      RETURNING b.due_at, b.claim IS NULL AS waiting
    )
    SELECT \(SQLFragment.wakingWorkers(of: "$1", when: wakes, value: "true", otherwise: "false"))
    """
  }

  /// The `INSERT` of the submissions as new rows, without its conflict clause.
  private static func insert(tracingContexts: Bool, single: Bool) -> String {
    """
    INSERT INTO dpd_bursts AS b (name, key, value, deadline, due_at, first_submitted, sealed\(
        tracingContexts ? ", traces" : ""))
      SELECT $1, s.key, s.value::jsonb,
        CASE WHEN $7 <= 1 THEN \(now)
          ELSE \(now) + least(greatest(s.delay, 0), $6) * interval '1 millisecond' END,
        CASE WHEN $7 <= 1 THEN \(now)
          ELSE \(now) + least(greatest(s.delay, 0), $6) * interval '1 millisecond' END,
        \(now), \(cap) <= 1\(tracingContexts ? insertedTraces : "")
      FROM \(rows(tracingContexts: tracingContexts, single: single))
    """
  }

  /// The submissions the upsert reads, in key order (so that concurrent batches lock rows in one
  /// order); the single form's one row from the arrays' first elements.
  private static func rows(tracingContexts: Bool, single: Bool) -> String {
    precondition(!(tracingContexts && single), "the single form takes no trace context")
    if single { return "(SELECT $2[1] AS key, $3[1] AS value, $4[1] AS delay) AS s" }
    let columns = tracingContexts ? "key, value, delay, trace" : "key, value, delay"
    let arrays = "$2::text[], $3::text[], $4::float8[]" + (tracingContexts ? ", $10::text[]" : "")
    return "unnest(\(arrays)) AS s(\(columns))\n  ORDER BY s.key"
  }

  /// The batch made a waiting burst due earlier than every deadline the workers know of, or
  /// the earliest one is due within ``claimRaceMargin`` of the submissions' instant (``now``,
  /// read once: a second reading of `dpd_now()` here cost 1 % of a single submission's server
  /// instructions, 520,357 against 514,944, for a margin of 250 ms).
  private static let wakes = """
    EXISTS (
        SELECT 1 FROM upserted, earliest
        WHERE upserted.waiting AND (upserted.due_at < coalesce(earliest.at, 'infinity')
          OR earliest.at < \(now) + interval '\(claimRaceMargin)'))
    """

  /// A submission also notifies when the earliest pending deadline is this close, or past. A
  /// worker about to claim that burst reads the next deadline right after its claim, from a
  /// snapshot that may not hold this submission yet, while this statement's snapshot may not
  /// hold the claim yet: neither side would wake the other, and the submission would wait for
  /// `safetyPoll`. A statement that takes longer than this margin can still miss, and then
  /// `safetyPoll` bounds the wait.
  static let claimRaceMargin = "250 milliseconds"

  // The submission's place in a row that holds bursts, decided by the CASE branches below in
  // their order (each branch is reached only when the ones before it did not match):
  // - `fresh`: the row holds no burst (a failure of schema version 5, or a row kept only for
  //   the spacing); the submission makes it a fresh burst.
  // - `startsBehind`: the newest burst takes no more submissions (it is `sealed`: it reached
  //   `maxSubmissions`, a flush ended it, or it is a retried failure), or nothing waits behind
  //   the head and the head was claimed (it runs, or waits for the retry of a run that threw:
  //   P17, its value stays its own) or is due (T7); the submission starts a new burst at the
  //   end of `later`.
  // - otherwise, when `later` holds bursts, the submission joins the newest of them (the last
  //   one in `later`);
  // - otherwise it joins the head, which waits for its first run.
  // Each condition is written once per column, so that the database compiles a small
  // expression for each execution. The database compiles the conflict branch's expressions at
  // every execution, also when no row conflicts, and each reference to a variable or parameter
  // of `dpd_submit` there costs about 3,000 server instructions (`scripts/postgres-instructions.sh`):
  // so the conditions read the row and `excluded` (the submission's instant is
  // `excluded.first_submitted`), and `maxSubmissions` is compared once, where a submission
  // seals the burst it brings to it.

  /// The row holds no burst.
  private static let fresh = SQLFragment.holdsNoBurst
  /// Given a row that holds bursts: the submission starts a new burst behind them.
  private static let startsBehind = """
    (b.sealed
      OR (b.later = '[]'::jsonb AND (\(SQLFragment.headClaimed)
        OR b.due_at <= excluded.first_submitted)))
    """
  /// The deadline of the burst the submission joins: the instant it reached `maxSubmissions`,
  /// or as a deadline moves in-process. (A burst the submission starts has the submission's
  /// deadline, which is already the instant of its call when `maxSubmissions` is 1.)
  private static let joinedDeadline = """
    (CASE WHEN b.submissions + 1 >= \(cap) THEN excluded.first_submitted
      ELSE \(mergedDeadline) END)
    """
  /// The instant of the submissions: `dpd_submit`'s variable, read once from `dpd_now()`
  /// before the statement (see ``DatabaseFunctions``), so that the statement needs no join to
  /// read it.
  static let now = "submitted_at"
  /// `maxSubmissions` ($7), or the largest `int4` for none: `dpd_submit`'s variable, computed
  /// once before the statement.
  static let cap = "submission_cap"
  /// The key's last run start plus `minimumSpacing` ($9): a waiting head is due no sooner.
  private static let spaced = SQLFragment.spacedFrom("$9")
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
    (CASE WHEN \(fresh) THEN '[]'::jsonb WHEN \(startsBehind) THEN \(newestCounted)
      ELSE b.traces END)
    """
  /// The trace records with the submission's (its context, if any, is `excluded.traces`' only
  /// one): a fresh burst has the submission's; a new burst fixes the count of the newest one,
  /// and adds its own record; joining the newest burst adds the context, keeping its first and newest
  /// contexts within `TraceCarrier.maximumPerBurst`.
  private static let mergedTraces = """
    (CASE WHEN \(fresh) THEN excluded.traces
      WHEN \(startsBehind) THEN \(newestCounted) || excluded.traces
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

  /// The bindings `$1` to `$9`, in order, for both ways of sending the statement
  /// (``makeBindings()``, and ``HeldConnection``'s prepared statement).
  func encode<Encoder: BindingEncoder>(into encoder: inout Encoder) throws {
    try encoder.encode(name)
    try encoder.encode(PackedArray(submissions.map(\.key)))
    try encoder.encode(PackedArray(submissions.map(\.json)))
    try encoder.encode(PackedArray(submissions.map(\.delayMilliseconds)))
    try encoder.encode(restart)
    try encoder.encode(maxWaitMilliseconds)
    try encoder.encode(maxSubmissions)
    try encoder.encode(append)
    try encoder.encode(minimumSpacingMilliseconds)
  }

  func makeBindings() throws -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 9)
    try encode(into: &bindings)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }

  /// Sends the batch on `connection`, as ``TracedDelayStatement`` when a submission carries a
  /// trace context; returns whether it woke the workers. `committing`: in the form that commits
  /// before it answers (the queue's own calls), or as it is (a caller's transaction).
  func send(on connection: PostgresConnection, committing: Bool, logger: Logger) async throws
    -> Bool
  {
    let answer: Bool?
    switch (submissions.contains(where: { !$0.traceContext.isEmpty }), committing) {
    case (true, true):
      answer = try await connection.rows(
        Committed(TracedDelayStatement(statement: self)), logger: logger
      ).first
    case (true, false):
      answer = try await connection.rows(TracedDelayStatement(statement: self), logger: logger)
        .first
    case (false, true):
      answer = try await connection.rows(Committed(self), logger: logger).first
    case (false, false):
      answer = try await connection.rows(self, logger: logger).first
    }
    guard let answer else { throw UnexpectedAnswer() }
    return answer
  }

  /// Sends the batch on the queue's held connection (see ``HeldConnection``), whose answer
  /// completes the future on the connection's event loop, so that the call needs no task to
  /// wait in: through the statement prepared there (``committedSQL``), or, when a submission
  /// carries a trace context, as an unnamed ``TracedDelayStatement`` in its committing form.
  func send(on held: HeldConnection.Held, logger: Logger) -> EventLoopFuture<Bool> {
    let bindings: [PostgresData]
    do {
      if submissions.contains(where: { !$0.traceContext.isEmpty }) {
        let query = PostgresQuery(
          unsafeSQL: TracedDelayStatement.committedSQL,
          binds: try TracedDelayStatement(statement: self).makeBindings())
        return held.connection.query(query, logger: logger).flatMapThrowing { result in
          guard let row = result.rows.first else { throw UnexpectedAnswer() }
          return try decodeRow(row)
        }
      }
      bindings = try preparedBindings()
    } catch {
      return held.connection.eventLoop.makeFailedFuture(error)
    }
    return held.submit.execute(bindings).flatMapThrowing { rows in
      guard let row = rows.first else { throw UnexpectedAnswer() }
      return try Self.preparedAnswer(row)
    }
  }

  /// The boolean that the prepared statement answers. postgres-nio asks for it in binary but
  /// labels it with the format that the statement's description gave, text, so that
  /// `decode(Bool.self)` refuses it: this reads the one byte in either format.
  static func preparedAnswer(_ row: PostgresRow) throws -> Bool {
    guard let bytes = row.first?.bytes, bytes.readableBytes == 1 else { throw UnexpectedAnswer() }
    switch bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) {
    case 1, UInt8(ascii: "t"): return true
    case 0, UInt8(ascii: "f"): return false
    default: throw UnexpectedAnswer()
    }
  }

  /// `dpd_submit` answered something else than one boolean (or no row at all).
  struct UnexpectedAnswer: Error, CustomStringConvertible {
    var description: String { "dpd_submit answered something else than one boolean" }
  }

  /// The bindings as the prepared statement of ``HeldConnection`` takes them: the same values,
  /// from ``encode(into:)``, in their binary encodings.
  private func preparedBindings() throws -> [PostgresData] {
    var bindings = PreparedBindings()
    try encode(into: &bindings)
    return bindings.values
  }
}

/// ``DelayStatement`` for a batch in which a submission carries a trace context: the same
/// upsert, which also stores each submission's context (`$10`, "" for none) in the trace record
/// of the burst it joins or starts. A separate statement, so that a batch without contexts
/// (every batch, without a tracer) sends and evaluates none of it.
struct TracedDelayStatement: CommittingStatement {
  typealias Row = Bool

  static let sql = "SELECT dpd_submit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
  static let committedSQL =
    "CALL dpd_submit_committed($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL)"
  static let committedName = "dpd.committed.traced-delay"
  static let bindingDataTypes = DelayStatement.bindingDataTypes + [.textArray]

  var statement: DelayStatement

  func makeBindings() throws -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 10)
    try statement.encode(into: &bindings)
    try bindings.encode(PackedArray(statement.submissions.map(\.traceContext)))
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try statement.decodeRow(row) }
}

/// Statement texts that another target of this package needs: the benchmark
/// (dpd-postgres-bench) prints `delay`'s as a pgbench script, so that pgbench runs the statement
/// the package sends, not a copy that could drift from it.
package enum StatementText {
  /// ``DelayStatement/committedSQL``, as the queue's own `delay` sends it: `$1` to `$9` are
  /// its bindings, in the order of ``DelayStatement/bindingDataTypes``.
  package static var delay: String { DelayStatement.committedSQL }
  /// ``DelayStatement/sql``, as a transactional `delay(on:)` sends it on the caller's
  /// connection: the plain `SELECT`, which commits with the caller's transaction (a `CALL` that
  /// commits cannot run in a transaction block). The same bindings as ``delay``.
  package static var delayInTransaction: String { DelayStatement.sql }
  /// ``ClaimStatement/body``, the SQL of `dpd_claim`: `$1` to `$6` are its bindings, in the order of
  /// ``ClaimStatement/bindingDataTypes`` (name, limit, owner, the lease in milliseconds,
  /// `maxAttempts`, the spacing in milliseconds).
  package static var claim: String { ClaimStatement.body }
  /// ``SucceededStatement/sql``, the end of successful runs, a batch per statement.
  package static var succeeded: String { SucceededStatement.sql }
}
