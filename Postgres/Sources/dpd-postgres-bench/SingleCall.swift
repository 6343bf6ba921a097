import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO

/// The ways of sending one `SELECT 1` that issue 42's item 5 compares: through the client's pool
/// as the report's client floor does, and on a connection held outside the pool, the cheapest
/// that postgres-nio allows. Each is a floor for one producer's `delay`, which keeps a connection
/// of the pool for its single calls and sends a prepared statement on it.
enum SingleCall {
  enum Way: String, CaseIterable, Sendable {
    /// `client.query("SELECT 1")`, its rows not read: the report's client floor.
    case pool
    /// The same, with its row read.
    case poolRows = "pool-rows"
    /// `connection.query("SELECT 1", logger:)` on a connection held outside the pool, its row
    /// read: no lease, the statement parsed and planned at every call (unnamed).
    case held
    /// postgres-nio's future-based `query` on the held connection: the rows are gathered on
    /// the connection's event loop, and the caller resumes once, with all of them.
    case heldFuture = "held-future"
    /// A prepared `SELECT 1` on the held connection, its row read: no lease, no parse, no plan.
    /// The cheapest floor.
    case heldPrepared = "held-prepared"
    /// One producer's `delay` with a fresh key each call, the call these are floors for.
    case delay

    var note: String {
      switch self {
      case .pool: "SELECT 1 through PostgresClient.query, rows not read (the report's floor)"
      case .poolRows: "SELECT 1 through PostgresClient.query, its row read"
      case .held: "SELECT 1 on a PostgresConnection held outside the pool, unnamed, row read"
      case .heldFuture: "SELECT 1 on the held connection, future-based query, rows gathered"
      case .heldPrepared: "SELECT 1 prepared on a PostgresConnection held outside the pool"
      case .delay: "delay, distinct keys, 1 producer"
      }
    }
  }

  /// A connection made outside the pool, as the bench's client would make one (loopback,
  /// without TLS: the bench's servers are `scripts/postgres.sh`'s).
  static func heldConnection(
    _ pool: PostgresClient.Configuration
  ) async throws -> PostgresConnection {
    guard let host = pool.host, let port = pool.port else {
      fatalError("SingleCall.heldConnection: the bench's URL must name a host and a port")
    }
    let configuration = PostgresConnection.Configuration(
      host: host, port: port, username: pool.username, password: pool.password,
      database: pool.database, tls: .disable)
    return try await PostgresConnection.connect(
      configuration: configuration, id: 1, logger: silentLogger)
  }

  /// One call of `way` (not `.delay`, which needs a queue).
  static func run(
    _ way: Way, client: PostgresClient, connection: PostgresConnection
  ) async throws {
    switch way {
    case .pool:
      try await client.query("SELECT 1")
    case .poolRows:
      for try await _ in try await client.query("SELECT 1") {}
    case .held:
      for try await _ in try await connection.query("SELECT 1", logger: silentLogger) {}
    case .heldFuture:
      _ = try await connection.query("SELECT 1").get()
    case .heldPrepared:
      for try await _ in try await connection.execute(SelectOne(), logger: silentLogger) {}
    case .delay:
      preconditionFailure("SingleCall.run: way .delay is sent through a queue, not here")
    }
  }
}

/// `SELECT 1`, prepared on the connection once and then only bound and executed.
struct SelectOne: PostgresPreparedStatement {
  typealias Row = Int32
  static let sql = "SELECT 1"
  static let bindingDataTypes: [PostgresDataType] = []

  func makeBindings() -> PostgresBindings { PostgresBindings() }
  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
}
