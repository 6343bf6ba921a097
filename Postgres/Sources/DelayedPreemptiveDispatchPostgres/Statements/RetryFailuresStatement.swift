import PostgresNIO

/// `retryFailure`: takes the kept failures that `selection` picks (a key's, or one by its id)
/// out of `dpd_failures` and makes them bursts of their key again, oldest first (P17), in one
/// statement: a concurrent retry of the same failure finds it gone, so none runs twice for one
/// kept failure. Returns how many it retried, and wakes the workers when there was one.
///
/// The retried bursts are put in the key's row without being merged with any burst: with no row
/// (or an `idle` one, whose `last_start` stays), they make a fresh row, the first one due now
/// (no sooner than the spacing, $3 in milliseconds, after the key's last run start); when the
/// head has been claimed (it runs, or waits for its retry), they go right behind it, before the
/// bursts that wait; when the head waits for its first run, they go before it, the first one due
/// now, and the head keeps its deadline. Bursts that are not the newest are due at once when
/// they become the head, as bursts that reached `maxSubmissions` are. A retried burst takes no
/// submissions: when it is the newest, it is sealed (see `Schema`), and the row's `submissions`
/// is the largest `int4`, so that a submission starts a new burst behind it. The
/// retried bursts are always first in line among the waiting ones (behind a claimed head, or
/// before a head that waits for its first run), and the row counts them (`retried_first`, see
/// `Schema`): they are pending, so that `cancel` drops them. Its trace
/// record is the one it was kept with, its count fixed there.
struct RetryFailuresStatement {
  var name: String
  var selection: FailureSelection
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double

  var query: PostgresQuery {
    var bindings = PostgresBindings(capacity: 3)
    bindings.append(name)
    selection.append(to: &bindings)
    bindings.append(minimumSpacingMilliseconds)
    return PostgresQuery(unsafeSQL: Self.sql(selecting: selection.condition), binds: bindings)
  }

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
        submissions, traces, retried_first, sealed)
      SELECT $1, r.key, r.bursts -> 0, r.bursts - 0, now.t, now.t, now.t, \(takesNoSubmissions),
        r.records, jsonb_array_length(r.bursts), true
      FROM retried AS r, (SELECT dpd_now() AS t) AS now
      ORDER BY r.key
      ON CONFLICT (name, key) DO UPDATE SET
        value = CASE WHEN \(claimed) THEN b.value ELSE excluded.value END,
        later = CASE WHEN \(fresh) THEN excluded.later
          WHEN \(claimed) THEN \(allRetried) || b.later
          ELSE excluded.later || jsonb_build_array(b.value) || b.later END,
        traces = CASE WHEN \(fresh) THEN excluded.traces
          WHEN \(claimed) THEN jsonb_build_array(\(keptTraceRecord)) || excluded.traces
            || (b.traces - 0)
          ELSE excluded.traces || b.traces END,
        submissions = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb)
          THEN excluded.submissions ELSE b.submissions END,
        deadline = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb)
          THEN excluded.deadline ELSE b.deadline END,
        first_submitted = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb)
          THEN excluded.first_submitted ELSE b.first_submitted END,
        due_at = CASE WHEN \(claimed) THEN b.due_at
          ELSE greatest(excluded.due_at, \(SQLFragment.spacedFrom("$3"))) END,
        retried_first = CASE WHEN \(fresh) THEN excluded.retried_first
          ELSE b.retried_first + excluded.retried_first END,
        sealed = CASE WHEN \(fresh) OR (\(claimed) AND b.later = '[]'::jsonb) THEN true
          ELSE b.sealed END,
        attempts = CASE WHEN \(claimed) THEN b.attempts ELSE 0 END,
        last_error = CASE WHEN \(claimed) THEN b.last_error ELSE NULL END,
        generation = b.generation + 1,
        failed = false,
        idle = false
      RETURNING 1
    )
    SELECT \(SQLFragment.wakingWorkers(
      of: "$1", when: "EXISTS (SELECT 1 FROM upserted)", value: "(SELECT count(*) FROM taken)",
      otherwise: "0"))
    """
  }

  /// The largest `int4`: a newest burst with this many submissions takes no more.
  static let takesNoSubmissions = "2147483647"
  /// The row holds no burst: the retried bursts make a fresh row.
  private static let fresh = SQLFragment.holdsNoBurst
  /// The head has been claimed: it runs, or waits for its retry.
  private static let claimed = "(NOT \(fresh) AND \(SQLFragment.headClaimed))"
  /// The claimed head's trace record with its count fixed, as the retried bursts go behind it.
  private static let keptTraceRecord = SQLFragment.keptTraceRecord("b")
  /// Every retried burst, oldest first.
  private static let allRetried = "(jsonb_build_array(excluded.value) || excluded.later)"
}
