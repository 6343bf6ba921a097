import PostgresNIO

/// `runningBursts`: the queue's claimed rows, by key, with their owner, attempt, fence and the
/// milliseconds their lease has left (negative once it ran out). Read-only.
struct RunningBurstsStatement: QueueReadStatement {
  typealias Row = PostgresRunningBurst

  static let sql = """
    SELECT key, coalesce(owner, ''), attempts, coalesce(fence, 0),
      (extract(epoch FROM due_at - clock_timestamp()) * 1000)::float8
    FROM dpd_bursts WHERE name = $1 AND claim IS NOT NULL AND NOT failed ORDER BY key
    """
  var name: String

  func decodeRow(_ row: PostgresRow) throws -> Row {
    let (key, owner, attempt, fence, leftMilliseconds) = try row.decode(
      (String, String, Int, Int64, Double).self)
    return PostgresRunningBurst(
      key: key, owner: owner, attempt: attempt, fence: fence,
      leaseLeft: .milliseconds(leftMilliseconds))
  }
}
