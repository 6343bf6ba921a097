import PostgresNIO

/// `namesInUse`: every queue name with rows in the database (bursts that wait or run, and kept
/// failures), with how many, at most `limit` names, by name. Read-only; refused with `42P01`
/// when no queue was ever migrated in the database.
struct NamesInUseStatement: PostgresPreparedStatement {
  typealias Row = StoredQueueName

  static let sql = """
    SELECT name, count(*) FROM (
      SELECT name FROM dpd_bursts WHERE NOT idle UNION ALL SELECT name FROM dpd_failures
    ) AS rows
    GROUP BY name ORDER BY name LIMIT $1
    """
  static let bindingDataTypes: [PostgresDataType] = [.int8]

  var limit: Int

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 1)
    bindings.append(limit)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (name, rows) = try row.decode((String, Int).self)
    return StoredQueueName(name: name, rows: rows)
  }
}
