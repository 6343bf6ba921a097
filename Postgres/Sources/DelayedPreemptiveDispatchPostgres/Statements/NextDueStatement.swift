import PostgresNIO

/// Milliseconds from the database's now to the earliest instant a row may be claimed (a
/// deadline or a lease's expiry); nil when the queue has nothing to do. Rows kept only for the
/// spacing (`idle`) are no work: a claim deletes them, and the worker's `safetyPoll` bounds how
/// long they wait for it.
struct NextDueStatement: QueueReadStatement {
  typealias Row = Double?

  static let sql = """
    SELECT (extract(epoch FROM min(due_at) - dpd_now()) * 1000)::float8
    FROM dpd_bursts WHERE name = $1 AND \(SQLFragment.holdsWork)
    """
  var name: String

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Double?.self) }
}
