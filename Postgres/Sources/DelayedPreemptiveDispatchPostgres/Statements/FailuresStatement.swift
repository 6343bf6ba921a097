import PostgresNIO

/// `rawFailures` (and `failures`): every kept failure of the queue with its stored JSON,
/// oldest first. Read-only.
struct FailuresStatement: QueueReadStatement {
  typealias Row = PostgresRawBurstFailure

  static let sql = """
    SELECT id, key, value::text, attempts, last_error FROM dpd_failures
    WHERE name = $1 ORDER BY id
    """
  var name: String

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (id, key, json, attempts, lastError) = try row.decode(
      (Int64, String, String, Int, String).self)
    return PostgresRawBurstFailure(
      id: id, key: key, json: json, attempts: attempts, lastError: lastError)
  }
}
