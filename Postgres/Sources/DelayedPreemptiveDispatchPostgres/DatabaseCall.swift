import PostgresNIO

/// Where the queue's database is, for the error that says it cannot be reached.
struct Endpoint: Sendable, Hashable {
  var host: String
  var port: Int
}

extension PostgresDelayedPreemptiveQueue {
  /// Runs one database operation, turning a database that cannot be reached into
  /// ``PostgresDelayedPreemptiveQueueError/databaseUnreachable(host:port:reason:)``.
  ///
  /// The client's pool keeps retrying a refused connection for about a minute before it fails a
  /// request, so the call also gives up after `connectionTimeout`; cancelling the waiting
  /// request withdraws it from the pool, so nothing is written after the error.
  func database<Result: Sendable>(
    _ operation: @escaping @Sendable () async throws -> Result
  ) async throws -> Result {
    let timeout = connectionTimeout
    let endpoint = endpoint
    do {
      return try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
          try await Task.sleep(for: timeout)
          return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else {
          throw PostgresDelayedPreemptiveQueueError.databaseUnreachable(
            host: endpoint.host, port: endpoint.port,
            reason: "no answer within \(timeout)")
        }
        return result
      }
    } catch let error as PSQLError where error.code == .connectionError {
      throw PostgresDelayedPreemptiveQueueError.databaseUnreachable(
        host: endpoint.host, port: endpoint.port,
        reason: error.underlying.map { String(describing: $0) } ?? "\(error.code)")
    } catch let error where String(reflecting: type(of: error)).contains("ConnectionPoolError") {
      throw PostgresDelayedPreemptiveQueueError.databaseUnreachable(
        host: endpoint.host, port: endpoint.port, reason: String(describing: error))
    }
  }
}

extension PostgresClient {
  /// Executes a prepared statement and collects its rows.
  func rows<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws
    -> [Statement.Row]
  {
    var rows: [Statement.Row] = []
    for try await row in try await execute(statement) { rows.append(row) }
    return rows
  }
}

extension PostgresClient {
  /// Runs a query and decodes the first column of its first row.
  func scalar<Column: PostgresDecodable>(_ query: PostgresQuery, as type: Column.Type)
    async throws -> Column?
  {
    var first: Column?
    for try await row in try await self.query(query) where first == nil {
      first = try row.decode(Column.self)
    }
    return first
  }
}
