/// The SQLSTATEs that the package acts on by name.
package enum SQLState {
  /// `undefined_table`: the schema was never migrated in this database.
  package static let undefinedTable = "42P01"
  /// `undefined_function`: the schema was never migrated in this database, met by a call of one
  /// of the package's SQL functions (`dpd_submit`, `dpd_cancel`, …) before its table.
  package static let undefinedFunction = "42883"
  /// The SQLSTATEs that mean "this database was never migrated": whichever the server meets
  /// first, a missing function or a missing table.
  package static let notMigrated: Set<String> = [undefinedTable, undefinedFunction]
  /// `insufficient_privilege`: the role may not do what the statement asks.
  package static let insufficientPrivilege = "42501"
  /// `too_many_connections`: the server takes no more sessions for now.
  static let tooManyConnections = "53300"
  /// `lock_not_available`: the statement was refused a lock.
  static let lockNotAvailable = "55P03"
  /// `read_only_sql_transaction`: the node is read-only (a standby, or a primary that came back
  /// as one after a failover), or the session's transactions are.
  static let readOnlyTransaction = "25006"
}

// The one classification of what goes wrong: every error the package's calls throw is a
// `PostgresDelayedPreemptiveQueueError`, whose `kind` decides what a caller or a worker does
// with it. A server's refusal is classified here by its SQLSTATE, once: the call's wrapping
// (`CallFailure` in DatabaseCall.swift) turns an outage into `databaseUnreachable` or
// `outcomeUnknown` by it, and every other refusal keeps its SQLSTATE in `databaseError`, whose
// kind is read here again. The worker's loops retry what `isTransient` says and log the rest as
// defects; the submission batch sends a conflict again and splits a batch refused for its data.
extension PostgresDelayedPreemptiveQueueError {
  /// What went wrong, as a caller or a worker acts on it.
  enum Kind: Sendable, Hashable {
    /// The database could not be reached, or did not confirm a call that was sent: wait and
    /// retry (the call may have been applied, so every statement a worker retries is written to
    /// be safe when its first attempt was applied). From the server: SQLSTATE classes 08
    /// (connection exception) and 57 (operator intervention: a shutdown or a restart ends the
    /// session; `57P03`, a server still starting up or in recovery), `53300` (too many
    /// connections), and `25006` (a read-only node: a standby, or the old primary after a
    /// failover, still reached through a name or address that moved).
    case outage
    /// The statement lost a deadlock or a serialization conflict (SQLSTATE class 40), or was
    /// refused a lock (`55P03`): it was rolled back, and sending it again is safe.
    case conflict
    /// Retrying cannot heal it: a schema that is newer (``Schema/newerSchemaState``) or was
    /// never migrated (`42883` for a missing function, `42P01` for a missing table), a missing
    /// permission (`42501`). A worker stops.
    case permanent
    /// The database refused the statement for the data it was given or computed (SQLSTATE
    /// classes 22 data exception, 23 integrity constraint, 54 program limit; and XX, internal):
    /// for a submission, its input; for a worker's own statement, a defect of this package,
    /// which a retry cannot heal. Logged at error level with the statement's name and counted.
    case data
    /// Bad input refused before anything was sent, or a stored value that does not decode.
    case input
    /// Any other refusal of the database.
    case other

    /// The kind of a server's refusal with `sqlState`.
    init(sqlState: String) {
      if sqlState.hasPrefix("08") || sqlState.hasPrefix("57")
        || sqlState == SQLState.tooManyConnections || sqlState == SQLState.readOnlyTransaction
      {
        self = .outage
      } else if sqlState == Schema.newerSchemaState || SQLState.notMigrated.contains(sqlState)
        || sqlState == SQLState.insufficientPrivilege
      {
        self = .permanent
      } else if sqlState.hasPrefix("40") || sqlState == SQLState.lockNotAvailable {
        self = .conflict
      } else if ["22", "23", "54", "XX"].contains(where: sqlState.hasPrefix) {
        self = .data
      } else {
        self = .other
      }
    }

    /// The kind of any error a worker's loop meets: a typed error's own; anything else (which
    /// the package's calls never throw: a connection the worker holds outside them) counts as
    /// an outage.
    init(of error: any Error) {
      self = (error as? PostgresDelayedPreemptiveQueueError)?.kind ?? .outage
    }

    /// Whether waiting and sending the statement again can heal it: an outage or a conflict.
    /// A worker's loop retries these with its backoff; any other refusal of a worker's own
    /// statement is a defect of this package.
    var isTransient: Bool { self == .outage || self == .conflict }
  }

  var kind: Kind {
    switch self {
    case .databaseUnreachable, .outcomeUnknown: .outage
    case .newerSchema: .permanent
    case .emptyKey, .invalidKey, .valueNotEncodable, .valueNotDecodable: .input
    case .databaseError(_, let sqlState, _): Kind(sqlState: sqlState)
    }
  }

  /// The SQLSTATE of a refusal by the database; nil for any other error.
  var sqlState: String? {
    if case .databaseError(_, let sqlState, _) = self { return sqlState }
    return nil
  }

  /// The label of the call that the database refused (see
  /// ``databaseError(operation:sqlState:reason:)``); nil for any other error.
  var operation: String? {
    if case .databaseError(let operation, _, _) = self { return operation }
    return nil
  }

  /// Whether retrying cannot heal the error: a schema that is newer or was never migrated
  /// (`42883`, `42P01`), a missing permission (`42501`). A worker stops for these and retries everything
  /// else, a connection refused for its password or database name included (those are
  /// ``databaseUnreachable(host:port:reason:)``, with the server's reason): an operator may fix
  /// them while the worker waits.
  var isPermanent: Bool { kind == .permanent }

  /// Whether the database refused a statement for the data it was given (SQLSTATE classes 22
  /// data exception, 23 integrity constraint, 54 program limit exceeded).
  var isCausedByData: Bool { kind == .data }

  /// Whether the statement lost a deadlock or a serialization conflict (SQLSTATE class 40): it
  /// was rolled back, and sending it again is safe.
  var isConflict: Bool { kind == .conflict }

  /// Whether waiting and sending the statement again can heal it (see ``Kind/isTransient``).
  var isTransient: Bool { kind.isTransient }

  /// Whether the database refused the call because it was never migrated: SQLSTATE `42883`
  /// (`undefined_function`, a call of one of the package's SQL functions such as `dpd_submit`)
  /// or `42P01` (`undefined_table`), whichever the server meets first. Call
  /// ``PostgresDelayedPreemptiveQueue/migrate()`` once and retry; a worker migrates as it
  /// starts.
  public var isNotMigrated: Bool {
    sqlState.map(SQLState.notMigrated.contains) ?? false
  }

  /// Whether the call was sent and may have been applied.
  var isUnconfirmed: Bool {
    if case .outcomeUnknown = self { return true }
    return false
  }
}
