// The SQL of the queue, one prepared statement per operation. Every instant comes from the
// database's `clock_timestamp()`, never from a replica's clock. Durations travel as
// milliseconds (float8). `$1` is always the queue's name.

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
