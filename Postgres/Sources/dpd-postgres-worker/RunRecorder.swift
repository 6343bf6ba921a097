import PostgresNIO

/// Records each run's start and end (database clock) in `dpd_test_runs`, so that tests can
/// check in SQL that no two runs of one key overlapped. The tests create the table
/// (`RunTable.create` in the tests).
struct RunRecorder: Sendable {
  let client: PostgresClient
  let worker: String
  let name: String

  func started(key: String, value: String) async throws -> Int {
    let rows = try await client.query(
      """
      INSERT INTO dpd_test_runs (name, key, value, worker, started)
      VALUES (\(name), \(key), \(value), \(worker), clock_timestamp()) RETURNING id
      """)
    for try await id in rows.decode(Int.self) { return id }
    throw RecorderError.noID
  }

  func finished(_ run: Int) async throws {
    try await client.query(
      "UPDATE dpd_test_runs SET finished = clock_timestamp() WHERE id = \(run)")
  }

  enum RecorderError: Error { case noID }
}
