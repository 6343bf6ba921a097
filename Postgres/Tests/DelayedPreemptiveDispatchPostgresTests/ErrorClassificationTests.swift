import Logging
import MetricsTestKit
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The one classification of what goes wrong (`PostgresDelayedPreemptiveQueueError.Kind`), and
/// the labels under which a worker's loop reports a refusal. Needs no server.
@Suite struct PostgresErrorClassificationTests {
  /// Each SQLSTATE the package acts on, and a few it does not, with its kind: what a worker
  /// retries (an outage, a conflict), stops for (permanent) or reports as a defect.
  @Test(arguments: [
    ("08006", PostgresDelayedPreemptiveQueueError.Kind.outage),  // connection failure
    ("57P01", .outage),  // admin shutdown: a restart ends the session
    ("53300", .outage),  // too many connections
    ("25006", .outage),  // read-only transaction: a standby, or a former primary
    ("57P03", .outage),  // cannot connect now: starting up, or in recovery
    ("40001", .conflict),  // serialization failure
    ("40P01", .conflict),  // deadlock
    ("55P03", .conflict),  // lock not available
    ("42P01", .permanent),  // never migrated: a table is missing
    ("42883", .permanent),  // never migrated: a function such as dpd_submit is missing
    ("42501", .permanent),  // missing permission
    (Schema.newerSchemaState, .permanent),
    ("22012", .data),
    ("23514", .data),
    ("54000", .data),
    ("XX000", .data),
    ("42601", .other),  // a syntax error
    (DatabaseFunctions.unknownQueueState, .other),
  ])
  func sqlStateHasItsKind(sqlState: String, kind: PostgresDelayedPreemptiveQueueError.Kind) {
    #expect(PostgresDelayedPreemptiveQueueError.Kind(sqlState: sqlState) == kind)
    let refused = PostgresDelayedPreemptiveQueueError.databaseError(
      operation: "claim", sqlState: sqlState, reason: "refused")
    #expect(refused.kind == kind)
    #expect(refused.isTransient == (kind == .outage || kind == .conflict))
  }

  /// The errors that are not a refusal: an unreachable database and an unconfirmed call are
  /// outages, a newer schema is permanent, bad input is input; any error that is not the
  /// package's counts as an outage for a worker's loop.
  @Test func errorsThatAreNoRefusalHaveTheirKind() {
    typealias QueueError = PostgresDelayedPreemptiveQueueError
    let unreachable = QueueError.databaseUnreachable(host: "h", port: 1, reason: "r")
    #expect(unreachable.kind == .outage)
    #expect(QueueError.outcomeUnknown(key: nil, host: "h", port: 1, reason: "r").kind == .outage)
    #expect(QueueError.newerSchema(found: 9, supported: 6).kind == .permanent)
    #expect(QueueError.emptyKey.kind == .input)
    #expect(QueueError.Kind(of: CancellationError()) == .outage)
    #expect(QueueError.Kind(of: unreachable) == .outage)
  }

  /// A loop sends several statements (the claim loop: `claim`, `nextDeadline`,
  /// `releaseUnknownClaims`): a refusal is counted and logged under the label of the call that
  /// was refused, never under the loop's main statement.
  @Test func aRefusalIsReportedUnderTheLabelOfTheRefusedCall() throws {
    let logs = LogCollector()
    let metrics = TestMetrics()
    var outage = Outage(what: "claiming", cap: .seconds(1), logger: logs.logger())
    let refused = PostgresDelayedPreemptiveQueueError.databaseError(
      operation: "nextDeadline", sqlState: "22012", reason: "division by zero")
    _ = outage.failed(refused, defects: QueueMetrics(queue: "labels", factory: metrics))

    let defects = try metrics.expectCounter(
      "dpd.postgres.defects", [("queue", "labels"), ("statement", "nextDeadline")])
    #expect(defects.totalValue == 1)
    let errors = logs.lines.filter { $0.level == .error }
    #expect(errors.count == 1, "\(errors)")
    #expect(
      errors.allSatisfy {
        $0.message.contains("the database refused nextDeadline while claiming")
          && $0.metadata.contains("dpd.statement=nextDeadline")
      }, "\(errors)")
    #expect(!outage.isOngoing, "a defect is no outage")
  }
}
