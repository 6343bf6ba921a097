import PostgresNIO

/// `flush`: a call of `dpd_flush` (``DatabaseFunctions``), whose body is ``rules(name:key:)``.
/// It runs the key's pending bursts (see ``CancelStatement`` for which are pending) as soon as
/// the bursts ahead of them allow, and leaves its closed ones as they are (T2, T3), as
/// in-process:
/// - the newest burst, while it takes submissions, is sealed (a closed burst now, due at once
///   when it becomes the head; the next submission starts a new burst);
/// - when the first burst in line is pending, it is due now, and `minimumSpacing` is lifted for
///   it (`last_start` is null): at once when the head is not claimed, else when that run ends;
/// - a closed head keeps its due instant, spacing included: the bursts behind it wait for it,
///   and for the spacing from its start (the store counts the spacing from a run's start, so
///   two starts are never closer than the spacing unless a flush lifted it for the first).
///
/// It wakes the workers when there was a pending burst, and returns whether there was one.
struct FlushStatement: CommittingStatement {
  typealias Row = Bool

  static let sql = "SELECT dpd_flush($1, $2)"
  /// The same call through `dpd_flush_committed`, which commits before it answers: the queue's
  /// own `flush` (see ``CommittingStatement``).
  static let committedSQL = "CALL dpd_flush_committed($1, $2, NULL)"
  static let committedName = "dpd.committed.flush"
  static let bindingDataTypes: [PostgresDataType] = [.text, .text]

  var name: String
  var key: String

  /// The statement of the rules, with the SQL expressions of the queue's name and the key; it
  /// selects whether it flushed a burst.
  static func rules(name: String, key: String) -> String {
    """
    WITH found AS (
        SELECT key, sealed,
          (CASE WHEN claim IS NULL THEN 1 ELSE 0 END) + jsonb_array_length(later) AS in_line,
          retried_first + (CASE WHEN claim IS NULL AND attempts > 0 THEN 1 ELSE 0 END)
            AS pending_first
        FROM dpd_bursts
        WHERE name = \(name) AND key = \(key) AND \(SQLFragment.holdsWork)
        FOR UPDATE
      ), pending AS (
        SELECT key, NOT sealed AND in_line > pending_first AS open_newest,
          pending_first > 0 OR (in_line = 1 AND NOT sealed) AS first_pending
        FROM found
      ), flushed AS (
        UPDATE dpd_bursts AS b SET
          sealed = true,
          deadline = CASE WHEN p.open_newest OR (p.first_pending AND b.claim IS NULL
              AND b.later = '[]'::jsonb) THEN dpd_now() ELSE b.deadline END,
          last_start = CASE WHEN p.first_pending THEN NULL ELSE b.last_start END,
          due_at = CASE WHEN p.first_pending AND b.claim IS NULL THEN dpd_now() ELSE b.due_at END
        FROM pending AS p
        WHERE b.name = \(name) AND b.key = p.key AND (p.open_newest OR p.first_pending)
        RETURNING 1
      )
      SELECT \(SQLFragment.wakingWorkers(
        of: name, when: "EXISTS (SELECT 1 FROM flushed)", value: "true", otherwise: "false"))
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
