// The SQL of the queue lives in this folder, one statement (or one small family) per file, and
// what several statements share is written once here. Every instant comes from the database's
// clock through `dpd_now()` (`Schema.clock`), never from a replica's clock. Durations travel as
// milliseconds (float8).
// `$1` is always the queue's name. `b` is the alias of the row of `dpd_bursts` a statement
// changes.

/// The pieces of SQL that several statements share.
enum SQLFragment {
  /// The channel on which submissions, flushes and retried failures wake sleeping workers; the
  /// payload is the queue's name.
  static let wakeChannel = "dpd_wake"

  /// `value` when `condition` holds, once the workers of `queue` (an SQL expression of its name)
  /// are woken; else `otherwise`, and nobody is woken. The wake-up is a NOTIFY on
  /// ``wakeChannel``, which PostgreSQL delivers when the transaction commits.
  static func wakingWorkers(
    of queue: String, when condition: String, value: String, otherwise: String
  ) -> String {
    """
    CASE WHEN \(condition)
      THEN (SELECT \(value) FROM pg_notify('\(wakeChannel)', \(queue))) ELSE \(otherwise) END
    """
  }

  /// A row that holds work (a burst that waits or runs): not one kept only for the spacing
  /// (`idle`), nor a failure kept by a replica of schema version 5 (`failed`). Unqualified, for
  /// the statements that name `dpd_bursts` without an alias; the index on due rows has the same
  /// condition.
  static let holdsWork = "NOT failed AND NOT idle"

  /// The row holds no burst: a row kept only for the spacing (`idle`), or a failure kept by a
  /// replica of schema version 5 (`failed`; this version keeps none there). What the statement
  /// puts in it makes a fresh row.
  static let holdsNoBurst = "(b.failed OR b.idle)"

  /// The head has been claimed: it runs, or it ran and waits for the retry of a run that threw.
  /// Nothing joins it (P17: its value stays its own).
  static let headClaimed = "(b.claim IS NOT NULL OR b.attempts > 0)"

  /// The assignments that release a row's claim: no worker holds it.
  static let releasedClaim = "claim = NULL, owner = NULL, claimed_generation = NULL"

  /// When the burst behind the head (`later -> 0`) becomes due, as it becomes the head: at once
  /// if more bursts wait behind it (it reached `maxSubmissions`), else at the newest burst's
  /// deadline (which is the instant it reached `maxSubmissions`, if it did).
  static let nextHeadDue = """
    (CASE WHEN jsonb_array_length(b.later) > 1 THEN dpd_now() ELSE b.deadline END)
    """

  /// The earliest instant at which the key's next run may start under `minimumSpacing` (the
  /// placeholder `spacing`, in milliseconds): its last run's start plus the spacing, on the
  /// database's clock. Null when the key has no last start (no run yet, or a flush lifted the
  /// spacing): `greatest` ignores it then. `row` is the alias of the row in `dpd_bursts`.
  static func spacedFrom(_ spacing: String, row: String = "b") -> String {
    "(\(row).last_start + \(spacing) * interval '1 millisecond')"
  }

  /// The elements of the JSON array `array` from index `from` through index `through` (SQL
  /// expressions), in order: `[]` when `through` < `from`, and only those that exist.
  static func slice(_ array: String, from: String, through: String) -> String {
    """
    jsonb_path_query_array(\(array), '$[$from to $through]',
      jsonb_build_object('from', \(from), 'through', \(through)))
    """
  }

  /// The assignments that leave a row's head alone (`b`), when `cancel` drops the bursts behind it:
  /// its trace record is the only one left, and its count, kept in that record since a burst
  /// behind it started, is the newest burst's count (`submissions`) again.
  static let headAloneAgain = """
    submissions = coalesce((b.traces -> 0 ->> 'count')::int, b.submissions),
    traces = CASE WHEN b.traces = '[]'::jsonb THEN b.traces
      ELSE jsonb_build_array((b.traces -> 0) - 'count') END
    """

  /// The trace record of a row's head as its kept failure stores it (`dpd_failures.traces`):
  /// the head's record with its submission count fixed, which is in the record once a burst
  /// behind it started, else the row's `submissions`. `row` is the alias of the row of
  /// `dpd_bursts`.
  static func keptTraceRecord(_ row: String) -> String {
    """
    (jsonb_build_object('count', CASE WHEN \(row).later = '[]'::jsonb THEN \(row).submissions
      ELSE 1 END) || coalesce(\(row).traces -> 0, '{}'::jsonb))
    """
  }

  /// The start of a run whose end is being recorded, on the database's clock: the database's
  /// now minus `since`, the milliseconds from the handler's start to the moment the statement
  /// was made on the worker (the statement runs after that moment, so this instant is no
  /// earlier than the handler's start), and never before the claim (`b.last_start`). The
  /// claim's instant when the handler did not start (`since` < 0); null when a flush lifted the
  /// spacing.
  static func handlerStart(since: String) -> String {
    """
    (CASE WHEN b.last_start IS NULL THEN NULL WHEN \(since) < 0 THEN b.last_start
      ELSE greatest(b.last_start, dpd_now() - \(since) * interval '1 millisecond') END)
    """
  }

  /// What the end of a run (``SucceededStatement``, ``FailedStatement``) computes from the row
  /// as it locked it, as columns of its first CTE: the run's `started` (``handlerStart(since:)``
  /// with `since`), the next burst's `next_value`, `next_later` and `next_traces` as it becomes
  /// the head, due at `next_due`, no sooner than `spaced_until`, the end of `minimumSpacing`
  /// (`spacing`, in milliseconds) after the run's start; and whether the row `rests`: it keeps
  /// only that start while the spacing lasts, when no burst is left. Each is decided once, so
  /// that the statement's deletion and updates agree on one instant.
  static func endOfRun(since: String, spacing: String) -> String {
    let started = handlerStart(since: since)
    let spacedUntil = spacedAfterRun(since: since, spacing: spacing)
    return """
      \(started) AS started, b.later -> 0 AS next_value, b.later - 0 AS next_later,
          b.traces - 0 AS next_traces, greatest(\(nextHeadDue), \(spacedUntil)) AS next_due,
          \(spacedUntil) AS spaced_until,
          \(spacing) > 0 AND coalesce(\(spacedUntil) > dpd_now(), false) AS rests
      """
  }

  /// The end of `minimumSpacing` (`spacing`, in milliseconds) after the start of the run whose
  /// end is being recorded (``handlerStart(since:)`` with `since`).
  static func spacedAfterRun(since: String, spacing: String) -> String {
    "(\(handlerStart(since: since)) + \(spacing) * interval '1 millisecond')"
  }

  /// The assignments of a run's end that leave a row with no burst `idle` while the spacing
  /// lasts, from the columns of ``endOfRun(since:spacing:)`` under the alias `ended`: its
  /// value is dropped, and it is due (for the claim that deletes it) when the spacing ends.
  static func restingAfterRun(_ ended: String) -> String {
    """
    \(releasedClaim),
            attempts = 0, last_error = NULL, value = 'null'::jsonb, submissions = 0, idle = true,
            traces = '[]'::jsonb, sealed = false, retried_first = 0, last_start = \(ended).started, due_at = \(ended).spaced_until
    """
  }

  /// The assignments of a run's end that make the next burst the head, from the columns of
  /// ``endOfRun(since:spacing:)`` under the alias `ended`; its attempts start at 0.
  static func nextHeadAfterRun(_ ended: String) -> String {
    """
    \(releasedClaim),
            attempts = 0, value = \(ended).next_value, later = \(ended).next_later,
            traces = \(ended).next_traces, due_at = \(ended).next_due,
            last_start = \(ended).started
    """
  }
}
