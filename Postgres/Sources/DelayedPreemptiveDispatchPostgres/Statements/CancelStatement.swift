import PostgresNIO

/// `cancel`: a call of `dpd_cancel` (``DatabaseFunctions``), whose body is ``rules(name:key:spacing:)``.
/// It drops the key's pending bursts and leaves its closed ones (T2, C4), as in-process: of the
/// bursts that wait (the head, unless it is claimed, then those in `later`), a head that waits
/// for the retry of a run that threw, the retried failures first in line after it, and the
/// newest burst while it takes submissions are pending; the others reached `maxSubmissions`, or
/// were ended by a `flush`, and are decided runs (see `Schema`: `sealed`, `retried_first`).
///
/// - When no closed burst waits and the head is not claimed, the row is deleted, or kept `idle`
///   when the key's last run started within `minimumSpacing` ($3, milliseconds), so that the row
///   remembers that start.
/// - When no closed burst waits behind a claimed head (it runs), the bursts in `later` are
///   dropped, and the head's trace record is left alone.
/// - Otherwise the closed bursts stay, in order, with their trace records: the first of them is
///   the head when the head was not claimed (due as it was, or at once, no sooner than the
///   spacing, when a pending head before it was dropped); the newest of them is sealed, and due
///   at once when it becomes the head.
///
/// Returns whether it dropped a burst.
struct CancelStatement: CommittingStatement {
  typealias Row = Bool

  static let sql = "SELECT dpd_cancel($1, $2, $3 * interval '1 millisecond')"
  /// The same call through `dpd_cancel_committed`, which commits before it answers: the queue's
  /// own `cancel` (see ``CommittingStatement``).
  static let committedSQL = "CALL dpd_cancel_committed($1, $2, $3 * interval '1 millisecond', NULL)"
  static let committedName = "dpd.committed.cancel"
  static let bindingDataTypes: [PostgresDataType] = [.text, .text, .float8]

  var name: String
  var key: String
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double

  /// The statement of the rules, with the SQL expressions of the queue's name, the key and the
  /// spacing in milliseconds; it selects the number of rows it changed.
  static func rules(name: String, key: String, spacing: String) -> String {
    """
    WITH found AS (
        SELECT key, claim IS NULL AS head_waits, later, traces,
          (CASE WHEN claim IS NULL THEN 1 ELSE 0 END) + jsonb_array_length(later) AS in_line,
          retried_first + (CASE WHEN claim IS NULL AND attempts > 0 THEN 1 ELSE 0 END)
            AS pending_first,
          sealed,
          last_start + \(spacing) * interval '1 millisecond' AS spaced_until,
          coalesce(last_start + \(spacing) * interval '1 millisecond' > dpd_now(), false)
            AS rests
        FROM dpd_bursts
        WHERE name = \(name) AND key = \(key) AND \(SQLFragment.holdsWork)
        FOR UPDATE
      ), counted AS (
        SELECT *, greatest(in_line - pending_first - (CASE WHEN sealed THEN 0 ELSE 1 END), 0)
          AS closed
        FROM found
      ), cancelled AS (
        SELECT *,
          -- Where the closed bursts start and end in `later`, and the newest one's trace record.
          pending_first - (CASE WHEN head_waits THEN 1 ELSE 0 END) AS first_later,
          pending_first + closed - (CASE WHEN head_waits THEN 2 ELSE 1 END) AS last_later,
          pending_first + closed - (CASE WHEN head_waits THEN 1 ELSE 0 END) AS last_trace
        FROM counted WHERE closed < in_line
      ), waiting AS (
        DELETE FROM dpd_bursts AS b USING cancelled AS c
        WHERE b.name = \(name) AND b.key = c.key AND c.head_waits AND c.closed = 0
          AND NOT c.rests
        RETURNING 1
      ), rested AS (
        UPDATE dpd_bursts AS b SET idle = true, value = 'null'::jsonb, later = '[]'::jsonb,
          submissions = 0, attempts = 0, last_error = NULL, due_at = c.spaced_until,
          traces = '[]'::jsonb, sealed = false, retried_first = 0
        FROM cancelled AS c
        WHERE b.name = \(name) AND b.key = c.key AND c.head_waits AND c.closed = 0 AND c.rests
        RETURNING 1
      ), behind AS (
        UPDATE dpd_bursts AS b SET claimed_generation = b.generation, later = '[]'::jsonb,
          sealed = false, retried_first = 0, \(SQLFragment.headAloneAgain)
        FROM cancelled AS c
        WHERE b.name = \(name) AND b.key = c.key AND NOT c.head_waits AND c.closed = 0
        RETURNING 1
      ), narrowed AS (
        UPDATE dpd_bursts AS b SET
          value = CASE WHEN c.head_waits AND c.pending_first > 0 THEN c.later -> c.first_later
            ELSE b.value END,
          later = \(SQLFragment.slice(
            "c.later",
            from: "(CASE WHEN c.head_waits THEN c.pending_first ELSE c.first_later END)",
            through: "c.last_later")),
          traces = CASE WHEN c.traces = '[]'::jsonb THEN c.traces
            WHEN c.head_waits THEN \(SQLFragment.slice(
              "c.traces", from: "c.pending_first", through: "c.last_trace"))
            ELSE jsonb_build_array(c.traces -> 0) || \(SQLFragment.slice(
              "c.traces", from: "c.pending_first + 1", through: "c.last_trace")) END,
          submissions = CASE WHEN c.sealed THEN b.submissions
            ELSE coalesce((c.traces -> c.last_trace ->> 'count')::int, b.submissions) END,
          deadline = CASE WHEN c.sealed THEN b.deadline ELSE dpd_now() END,
          due_at = CASE WHEN c.head_waits AND c.pending_first > 0
            THEN greatest(dpd_now(), c.spaced_until) ELSE b.due_at END,
          attempts = CASE WHEN c.head_waits AND c.pending_first > 0 THEN 0 ELSE b.attempts END,
          last_error = CASE WHEN c.head_waits AND c.pending_first > 0 THEN NULL
            ELSE b.last_error END,
          sealed = true, retried_first = 0
        FROM cancelled AS c
        WHERE b.name = \(name) AND b.key = c.key AND c.closed > 0
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM waiting) + (SELECT count(*) FROM rested)
        + (SELECT count(*) FROM behind) + (SELECT count(*) FROM narrowed)
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
