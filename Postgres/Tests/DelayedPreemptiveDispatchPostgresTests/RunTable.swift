import Foundation
import PostgresNIO

/// The table in which `dpd-postgres-test-worker --record` writes each run's start and end (database
/// clock), and the SQL checks the replica tests make on it.
struct RunTable {
  let client: PostgresClient
  let name: String

  static func create(_ client: PostgresClient) async throws {
    try await client.query(
      """
      CREATE TABLE IF NOT EXISTS dpd_test_runs (
        id bigserial PRIMARY KEY, name text NOT NULL, key text NOT NULL, value text NOT NULL,
        worker text NOT NULL, started timestamptz NOT NULL, finished timestamptz,
        fence bigint, fenced_write_applied boolean, cancelled_at float8)
      """)
    // When the handler started on the machine's CLOCK_MONOTONIC (added after the table was
    // first made: a database that kept the table gets the column too).
    try await client.query(
      "ALTER TABLE dpd_test_runs ADD COLUMN IF NOT EXISTS monotonic float8")
    // The run's attempt, and when the first attempt of its burst started in the same worker
    // process (CLOCK_MONOTONIC): an attempt whose start record was lost (its insert timed out
    // while the worker's pool still backed off) still tells when the burst first ran.
    try await client.query(
      """
      ALTER TABLE dpd_test_runs ADD COLUMN IF NOT EXISTS attempt int,
        ADD COLUMN IF NOT EXISTS first_attempt_monotonic float8
      """)
    // When the handler ended on CLOCK_MONOTONIC, and when its fenced write reached the server:
    // a record held up by a partition lands late, and its `finished` would say when it landed.
    // `wall`: the worker's wall clock (Unix time) when its handler started.
    try await client.query(
      """
      ALTER TABLE dpd_test_runs ADD COLUMN IF NOT EXISTS finished_monotonic float8,
        ADD COLUMN IF NOT EXISTS fenced_write_at timestamptz, ADD COLUMN IF NOT EXISTS wall float8
      """)
    try await client.query(
      """
      CREATE TABLE IF NOT EXISTS dpd_test_fenced (
        name text NOT NULL, key text NOT NULL, value text NOT NULL, fence bigint NOT NULL,
        PRIMARY KEY (name, key))
      """)
    // What `--transactional` workers write in their runs' transactions: no key of its own, so
    // a stale run's write would never wait for a fresh one's, nor fail on it.
    try await client.query(
      """
      CREATE TABLE IF NOT EXISTS dpd_test_tx_writes (
        name text NOT NULL, key text NOT NULL, value text NOT NULL, fence bigint NOT NULL,
        worker text NOT NULL)
      """)
    // A document per key that transactional runs with --tx-document upsert: a run's upsert
    // waits for the row lock of another run of its key whose transaction is open.
    try await client.query(
      """
      CREATE TABLE IF NOT EXISTS dpd_test_tx_documents (
        name text NOT NULL, key text NOT NULL, writes int NOT NULL, fence bigint NOT NULL,
        PRIMARY KEY (name, key))
      """)
  }

  /// Pairs of finished runs of one key whose spans intersect: must be 0 (P3). By default a
  /// run's span is when its record reached the server and when its end did (the database's
  /// clock); `byHandlerTimes` takes when its handler started and ended on the machine's
  /// `CLOCK_MONOTONIC` instead (the test workers record both), for a partition, which can hold
  /// up a record of a run's end past the next run's start.
  func overlaps(byHandlerTimes: Bool = false) async throws -> Int {
    let (start, end) =
      byHandlerTimes ? ("monotonic", "finished_monotonic") : ("started", "finished")
    var bindings = PostgresBindings()
    bindings.append(name)
    return try await count(
      PostgresQuery(
        unsafeSQL: """
          SELECT count(*) FROM dpd_test_runs a JOIN dpd_test_runs b
            ON a.name = b.name AND a.key = b.key AND a.id < b.id
            AND a.\(start) < b.\(end) AND b.\(start) < a.\(end)
          WHERE a.name = $1
          """, binds: bindings))
  }

  /// Fenced writes that were applied after a write of the same key with a greater fence (in
  /// the order they reached the server): what the fencing recipe exists to prevent, and what a
  /// takeover that handed out a fence no greater than the stale run's would allow.
  func staleWritesApplied() async throws -> Int {
    try await count(
      """
      SELECT count(*) FROM (
        SELECT fence, max(fence) OVER (PARTITION BY key ORDER BY fenced_write_at, id
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM dpd_test_runs WHERE name = \(name) AND fenced_write_applied) w
      WHERE fence <= before
      """)
  }

  /// Values that ran more than once (every submission has a value of its own, so a burst that
  /// ran twice shows up here), among runs that finished.
  func finishedDuplicates() async throws -> Int {
    try await count(
      """
      SELECT count(*) FROM (SELECT key, value FROM dpd_test_runs
        WHERE name = \(name) AND finished IS NOT NULL GROUP BY key, value HAVING count(*) > 1) d
      """)
  }

  func runs(finished: Bool? = nil) async throws -> Int {
    switch finished {
    case nil: try await count("SELECT count(*) FROM dpd_test_runs WHERE name = \(name)")
    case true?:
      try await count(
        "SELECT count(*) FROM dpd_test_runs WHERE name = \(name) AND finished IS NOT NULL")
    case false?:
      try await count(
        "SELECT count(*) FROM dpd_test_runs WHERE name = \(name) AND finished IS NULL")
    }
  }

  /// Each key's value in its last finished run.
  func lastValues() async throws -> [String: String] {
    var values: [String: String] = [:]
    let rows = try await client.query(
      """
      SELECT DISTINCT ON (key) key, value FROM dpd_test_runs
      WHERE name = \(name) AND finished IS NOT NULL ORDER BY key, started DESC
      """)
    for try await (key, value) in rows.decode((String, String).self) { values[key] = value }
    return values
  }

  /// How many finished runs each key had.
  func finishedRunsPerKey() async throws -> [String: Int] {
    var counts: [String: Int] = [:]
    let rows = try await client.query(
      """
      SELECT key, count(*)::int8 FROM dpd_test_runs
      WHERE name = \(name) AND finished IS NOT NULL GROUP BY key
      """)
    for try await (key, count) in rows.decode((String, Int).self) { counts[key] = count }
    return counts
  }

  /// With `--append`, where each run's value is a JSON array: each key's elements over its
  /// finished runs, in the order the runs started.
  func finishedElements() async throws -> [String: [String]] {
    var elements: [String: [String]] = [:]
    let rows = try await client.query(
      """
      SELECT r.key, e.element FROM dpd_test_runs AS r,
        jsonb_array_elements_text(r.value::jsonb) WITH ORDINALITY AS e(element, position)
      WHERE r.name = \(name) AND r.finished IS NOT NULL
      ORDER BY r.key, r.started, r.id, e.position
      """)
    for try await (key, element) in rows.decode((String, String).self) {
      elements[key, default: []].append(element)
    }
    return elements
  }

  /// The key's row of dpd_test_tx_documents, which `--tx-document` runs upsert; nil before
  /// one committed.
  func document(_ key: String) async throws -> (writes: Int, fence: Int64)? {
    let rows = try await client.query(
      "SELECT writes, fence FROM dpd_test_tx_documents WHERE name = \(name) AND key = \(key)")
    for try await (writes, fence) in rows.decode((Int, Int64).self) { return (writes, fence) }
    return nil
  }

  /// How many other backends hold a lock on dpd_test_tx_documents: 1 while a `--tx-document`
  /// run's transaction is open after its write.
  func documentLockHolders() async throws -> Int {
    try await count(
      """
      SELECT count(DISTINCT l.pid)::int8 FROM pg_locks AS l
      JOIN pg_class AS c ON c.oid = l.relation
      WHERE c.relname = 'dpd_test_tx_documents' AND l.mode = 'RowExclusiveLock'
        AND l.pid <> pg_backend_pid()
      """)
  }

  private func count(_ query: PostgresQuery) async throws -> Int {
    for try await value in try await client.query(query).decode(Int.self) { return value }
    return 0
  }
}
