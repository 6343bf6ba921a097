import Logging
import PostgresNIO

extension Worker {
  /// Runs `body` in a transaction on a connection of the pool, and writes the run's end in the
  /// same transaction, which commits only if the run's claim still holds the key (rule P16).
  ///
  /// The transaction is opened when the handler starts and ended by this function: it rolls
  /// back when the handler throws (the run is then recorded as failed, outside it, and retried
  /// as P5 says), and when the claim was taken over meanwhile (`stale`: none of the run's
  /// writes land). The lease is renewed on other connections all the while; the row of the
  /// burst is locked only by the last statement, the run's end, so a renewal waits for no
  /// more than the commit.
  ///
  /// A run given up (``RunWatch``) closes the connection, which rolls the transaction back. While
  /// the transaction is open, its connection's `application_name` names the run's claim
  /// (``TransactionStatements/runMarkerPrefix``): a worker that takes the burst over ends this
  /// backend by it, so that the run's row locks cannot hold the new run up.
  func transactional(
    _ run: PostgresBurstRun<Value>, of burst: ClaimedBurst, watch: RunWatch,
    _ body: @escaping @Sendable (PostgresBurstRun<Value>, PostgresConnection) async throws -> Void
  ) async throws -> RunEnd {
    let logger = logger
    let queue = queue
    return try await queue.client.withConnection { connection in
      // postgres-nio can lend a connection the server has just closed, on which a query is
      // never answered: such a run fails at once instead, and is retried.
      guard !connection.isClosed else { throw PostgresError.connectionClosed }
      watch.holdsTransaction(on: connection)
      try await connection.query(TransactionStatements.begin, logger: logger)
      do {
        // Marks the transaction as this run's, so that a takeover can end it (P16).
        try await connection.query(TransactionStatements.markRun(burst.claim), logger: logger)
        try await body(run, connection)
        // The handler's start, as the statement takes it, when the handler has returned.
        let statement = SucceededStatement(
          name: name, keys: [burst.key], claims: [burst.claim],
          minimumSpacingMilliseconds: queue.minimumSpacingMilliseconds,
          millisecondsSinceHandlerStarts: [burst.millisecondsSinceHandlerStart])
        let ended = try await connection.rows(statement, logger: logger)
        guard ended.contains(burst.claim) else {
          await Self.rollBack(connection, logger: logger)
          return .stale
        }
      } catch {
        await Self.rollBack(connection, logger: logger)
        throw error
      }
      do {
        try await connection.query(TransactionStatements.commit, logger: logger)
      } catch {
        try? await connection.close()
        return .commitUnconfirmed
      }
      return .committed
    }
  }

  /// Rolls back the transaction open on `connection`; closes the connection if that fails, so
  /// that the pool never lends a connection left inside a transaction.
  private static func rollBack(_ connection: PostgresConnection, logger: Logger) async {
    do {
      try await connection.query(TransactionStatements.rollback, logger: logger)
    } catch {
      try? await connection.close()
    }
  }
}
