import Foundation
import PostgresNIO

/// The statements that open and end the transaction of a transactional handler's run (see
/// `Worker.transactional`).
enum TransactionStatements {
  static let begin: PostgresQuery = "BEGIN"
  static let commit: PostgresQuery = "COMMIT"
  static let rollback: PostgresQuery = "ROLLBACK"

  /// What a transactional run's connection reports as its `application_name` while its
  /// transaction is open: this prefix and the run's claim. It is set with `SET LOCAL`, so it
  /// ends with the transaction, and a connection that the pool lends again afterwards no longer
  /// carries it. A claim that takes the burst over finds the stale run's backend by it and ends
  /// it (`dpd_end_stale_run`), so that the stale run's row locks never hold the takeover up.
  static let runMarkerPrefix = "dpd-run "

  /// Marks the open transaction as the run of `claim` (see ``runMarkerPrefix``).
  static func markRun(_ claim: UUID) -> PostgresQuery {
    "SELECT set_config('application_name', \(runMarkerPrefix + claim.uuidString.lowercased()), true)"
  }
}
