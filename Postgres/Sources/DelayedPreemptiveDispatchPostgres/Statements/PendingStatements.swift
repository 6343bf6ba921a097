import PostgresNIO

// The reads of the queue's pending work: the rows that hold work (``SQLFragment/holdsWork``),
// waiting or running. Read-only.

/// `isPending`: whether the key's row holds work.
struct IsPendingStatement: PostgresPreparedStatement {
  typealias Row = Bool

  static let sql = """
    SELECT EXISTS (
      SELECT 1 FROM dpd_bursts
      WHERE name = $1 AND key = $2 AND \(SQLFragment.holdsWork))
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .text]

  var name: String
  var key: String

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 2)
    bindings.append(name)
    bindings.append(key)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
}

/// `pendingCount`: how many of the queue's rows hold work.
struct PendingCountStatement: QueueReadStatement {
  typealias Row = Int

  static let sql = "SELECT count(*) FROM dpd_bursts WHERE name = $1 AND \(SQLFragment.holdsWork)"
  var name: String

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int.self) }
}

/// The worker's gauges: how many of the queue's rows hold work (`dpd.postgres.pending`), and
/// the seconds since the deadline of the oldest due row that no worker holds
/// (`dpd.postgres.overdue.age`; 0 for none).
struct GaugesStatement: QueueReadStatement {
  typealias Row = (pending: Int, overdueSeconds: Double)

  static let sql = """
    SELECT count(*), coalesce(extract(epoch FROM dpd_now() - min(due_at) FILTER (
      WHERE claim IS NULL AND due_at <= dpd_now())), 0)::float8
    FROM dpd_bursts WHERE name = $1 AND \(SQLFragment.holdsWork)
    """
  var name: String

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (pending, overdue) = try row.decode((Int, Double).self)
    return (pending, overdue)
  }
}
