import PostgresNIO

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
          coalesce(last_start + \(spacing) * interval '1 millisecond' > dpd_now(), false)
            AS rests
        FROM dpd_bursts
        WHERE name = \(name) AND key = \(key) AND claim IS NULL AND \(SQLFragment.holdsWork)
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
          \(SQLFragment.headAloneAgain)
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
