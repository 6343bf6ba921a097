import PostgresNIO

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
        UPDATE dpd_bursts SET deadline = dpd_now(), last_start = NULL,
          due_at = CASE WHEN claim IS NULL THEN dpd_now() ELSE due_at END
        WHERE name = \(name) AND key = \(key) AND \(SQLFragment.holdsWork)
          AND (claim IS NULL OR later <> '[]'::jsonb)
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
