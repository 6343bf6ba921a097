import Foundation
import Logging
import PostgresNIO

/// The drain floor: the least SQL that a drain of due rows must send, by hand, with no package
/// code in between. Each of `clients` connections claims up to `batch` due rows of a queue (one
/// prepared `UPDATE` over a `FOR UPDATE SKIP LOCKED` subquery on the index of due rows, which
/// gives each row a claim and a lease, as any claim must so that a dead worker's rows are taken
/// over), then ends them (one prepared `DELETE` of those keys and claims), until no due row is
/// left: two round trips per batch, and no handler, fence, renewal, spacing or failure kept. The
/// limit a drain on this table is measured against, as the client floor is for `delay`.
enum DrainFloor {
  struct Claim: PostgresPreparedStatement {
    typealias Row = (String, UUID)
    static let sql = """
      UPDATE dpd_bursts AS b SET claim = gen_random_uuid(), owner = 'floor',
        due_at = clock_timestamp() + interval '30 seconds'
      FROM (
        SELECT key FROM dpd_bursts
        WHERE name = $1 AND NOT failed AND NOT idle AND due_at <= clock_timestamp()
        ORDER BY due_at LIMIT $2
        FOR UPDATE SKIP LOCKED
      ) AS due
      WHERE b.name = $1 AND b.key = due.key
      RETURNING b.key, b.claim
      """
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8]
    var name: String
    var limit: Int

    func makeBindings() -> PostgresBindings {
      var bindings = PostgresBindings(capacity: 2)
      bindings.append(name)
      bindings.append(limit)
      return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((String, UUID).self) }
  }

  struct End: PostgresPreparedStatement {
    typealias Row = Int
    static let sql = """
      WITH ended AS (
        DELETE FROM dpd_bursts AS b USING unnest($2::text[], $3::uuid[]) AS d(key, claim)
        WHERE b.name = $1 AND b.key = d.key AND b.claim = d.claim
        RETURNING 1
      )
      SELECT count(*)::int8 FROM ended
      """
    static let bindingDataTypes: [PostgresDataType] = [.text, .textArray, .uuidArray]
    var name: String
    var keys: [String]
    var claims: [UUID]

    func makeBindings() -> PostgresBindings {
      var bindings = PostgresBindings(capacity: 3)
      bindings.append(name)
      bindings.append(keys)
      bindings.append(claims)
      return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int.self) }
  }

  /// Drains the due rows of `name` from `clients` connections at once, `batch` rows per claim;
  /// returns how many rows were ended.
  static func drain(
    client: PostgresClient, name: String, clients: Int, batch: Int, logger: Logger
  ) async throws -> Int {
    try await withThrowingTaskGroup(of: Int.self) { group in
      for _ in 0..<clients {
        group.addTask {
          try await client.withConnection { connection in
            var ended = 0
            while true {
              var keys: [String] = []
              var claims: [UUID] = []
              for try await (key, claim) in try await connection.execute(
                Claim(name: name, limit: batch), logger: logger)
              {
                keys.append(key)
                claims.append(claim)
              }
              if keys.isEmpty { return ended }
              for try await count in try await connection.execute(
                End(name: name, keys: keys, claims: claims), logger: logger)
              {
                ended += count
              }
            }
          }
        }
      }
      return try await group.reduce(0, +)
    }
  }
}
