import PostgresNIO

/// A statement with a form that commits before it answers: a `CALL` of one of the procedures
/// `dpd_submit_committed`, `dpd_cancel_committed` and `dpd_flush_committed` (see
/// ``DatabaseFunctions``), which call the statement's function and then `COMMIT`.
///
/// Why: in the extended protocol, which postgres-nio speaks, the server answers a statement (its
/// rows, then `CommandComplete`) before it commits the statement's implicit transaction, at the
/// `Sync` message after it; postgres-nio 1.33.2 ends a query at `CommandComplete`. A commit that
/// fails after that answer (the `SIGTERM` of a restart arriving in between, a deferred
/// constraint) would be a call that returned and a write that is not there: a restart under load
/// lost acknowledged submissions that way (`restartsInARowEndNoWorkerAndLoseNoAcknowledgedSubmission`,
/// whose backend the server's log showed ended inside the submission's open transaction). The
/// procedure's `COMMIT` runs inside the statement, so the answer comes only once the commit is
/// done, and a failed commit is the statement's error (`PostgresCommitTests`).
///
/// A procedure that commits cannot run inside a transaction block: the calls on a caller's
/// connection (<doc:WorkThatCommitsWithYourData>) send the plain statement, which commits with
/// the caller's transaction.
protocol CommittingStatement: PostgresPreparedStatement {
  /// The `CALL` of the statement's committing procedure, with the same bindings.
  static var committedSQL: String { get }
  /// The name of the committing form's prepared statement on a connection: short, since the
  /// server keeps 63 bytes of a name (the generic type's own name, which postgres-nio would
  /// use, is cut there to the same text for every statement).
  static var committedName: String { get }
}

/// The form of `Statement` that commits before it answers (``CommittingStatement``).
struct Committed<Statement: CommittingStatement>: PostgresPreparedStatement {
  typealias Row = Statement.Row

  static var sql: String { Statement.committedSQL }
  static var name: String { Statement.committedName }
  static var bindingDataTypes: [PostgresDataType] { Statement.bindingDataTypes }

  var statement: Statement

  init(_ statement: Statement) { self.statement = statement }

  func makeBindings() throws -> PostgresBindings { try statement.makeBindings() }
  func decodeRow(_ row: PostgresRow) throws -> Row { try statement.decodeRow(row) }
}
