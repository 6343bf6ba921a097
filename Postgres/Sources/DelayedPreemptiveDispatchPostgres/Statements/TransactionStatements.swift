import PostgresNIO

/// The statements that open and end the transaction of a transactional handler's run (see
/// `Worker.transactional`).
enum TransactionStatements {
  static let begin: PostgresQuery = "BEGIN"
  static let commit: PostgresQuery = "COMMIT"
  static let rollback: PostgresQuery = "ROLLBACK"
}
