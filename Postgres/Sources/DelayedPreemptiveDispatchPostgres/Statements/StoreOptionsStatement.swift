import PostgresNIO

/// `migrate()`'s second statement: stores the queue's options under its name in `dpd_queues`,
/// for `dpd_delay` (rule P15; the last replica to migrate wins), and returns the options stored
/// before, if any, so that a replica whose options differ can say so.
struct StoreOptionsStatement: PostgresPreparedStatement {
  typealias Row = StoredOptions

  static let sql = """
    WITH previous AS (
      SELECT deadline_policy, max_wait_ms, max_submissions, merge, minimum_spacing_ms
      FROM dpd_queues WHERE name = $1
      FOR UPDATE
    ), stored AS (
      INSERT INTO dpd_queues AS q (name, deadline_policy, max_wait_ms, max_submissions, merge,
        minimum_spacing_ms, migrated_at)
      VALUES ($1, $2, $3, $4, $5, $6, dpd_now())
      ON CONFLICT (name) DO UPDATE SET deadline_policy = excluded.deadline_policy,
        max_wait_ms = excluded.max_wait_ms, max_submissions = excluded.max_submissions,
        merge = excluded.merge, minimum_spacing_ms = excluded.minimum_spacing_ms,
        migrated_at = excluded.migrated_at
    )
    SELECT deadline_policy, max_wait_ms, max_submissions, merge, minimum_spacing_ms FROM previous
    """
  static let bindingDataTypes: [PostgresDataType] = [
    .text, .text, .float8, .int8, .text, .float8,
  ]

  var name: String
  var options: StoredOptions

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 6)
    bindings.append(name)
    bindings.append(options.deadlinePolicy)
    if let maxWait = options.maxWaitMilliseconds {
      bindings.append(maxWait)
    } else {
      bindings.appendNull()
    }
    if let maxSubmissions = options.maxSubmissions {
      bindings.append(maxSubmissions)
    } else {
      bindings.appendNull()
    }
    bindings.append(options.merge)
    bindings.append(options.minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (policy, maxWait, maxSubmissions, merge, spacing) = try row.decode(
      (String, Double?, Int?, String, Double).self)
    return StoredOptions(
      deadlinePolicy: policy, maxWaitMilliseconds: maxWait, maxSubmissions: maxSubmissions,
      merge: merge, minimumSpacingMilliseconds: spacing)
  }
}
