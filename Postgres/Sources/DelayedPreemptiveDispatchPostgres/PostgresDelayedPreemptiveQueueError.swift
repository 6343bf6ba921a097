/// The typed errors of ``PostgresDelayedPreemptiveQueue``: bad input, an
/// unusable database, and a call whose outcome the database did not confirm. No error of the
/// driver reaches a caller: a driver error is wrapped here, with its SQLSTATE kept.
///
/// Every case but ``outcomeUnknown(key:host:port:reason:)`` says that the call wrote nothing, so
/// a failed call loses nothing that was stored before it, and retrying it is safe.
///
/// ```swift
/// do {
///   try await queue.delay(documentID, for: .seconds(2), value: edit)
/// } catch let error as PostgresDelayedPreemptiveQueueError {
///   logger.error("not scheduled: \(error)")
/// }
/// ```
public enum PostgresDelayedPreemptiveQueueError: Error, Sendable, Hashable, CustomStringConvertible
{
  /// A key was the empty string. Keys name the work ("document-42"); an empty one is a bug.
  case emptyKey
  /// A key that PostgreSQL cannot store: it holds a NUL character, or it is longer than
  /// ``PostgresDelayedPreemptiveQueue/maximumKeyBytes`` bytes of UTF-8. `key` is the key, cut
  /// to its first 64 characters; nothing was written.
  case invalidKey(key: String, reason: String)
  /// The value for `key` could not be stored: it does not encode as JSON (for instance a
  /// `Double.nan`), or its JSON holds a NUL character, which PostgreSQL's `jsonb` refuses.
  /// Nothing was written.
  case valueNotEncodable(key: String, reason: String)
  /// A stored value for `key` no longer decodes as `Value` (the type changed since it was
  /// stored); `reason` is the decoder's description. Nothing was changed.
  case valueNotDecodable(key: String, reason: String)
  /// The database at `host`:`port` could not be reached, or refused the connection; `reason`
  /// says why (the server's or the network's own reason when one was given, else "no answer
  /// within" the connection timeout). The call was not sent: nothing was written.
  case databaseUnreachable(host: String, port: Int, reason: String)
  /// The call was sent to the database at `host`:`port`, but no answer came within the
  /// connection timeout, or the connection broke before the answer, or the server ended the
  /// session after the call was sent (SQLSTATE classes 57 and 08, as a restart does: the server
  /// may commit a statement before it ends the session): the call may or may not have been
  /// applied. `key` is the key of the call, when it had one. Retrying is safe: a
  /// second `delay` of the same key and value has the effect of one.
  case outcomeUnknown(key: String?, host: String, port: Int, reason: String)
  /// The database answered `operation` with an error: `sqlState` is its SQLSTATE (for instance
  /// `42501` for a missing permission, `42P01` for a schema that was never migrated), and
  /// `reason` its message. Nothing was written.
  case databaseError(operation: String, sqlState: String, reason: String)
  /// The database holds schema `found`, newer than the `supported` version of this package:
  /// a newer release migrated it. Upgrade this replica rather than write to that schema.
  case newerSchema(found: Int, supported: Int)

  public var description: String {
    switch self {
    case .emptyKey:
      "PostgresDelayedPreemptiveQueue: the key is empty; give every burst a non-empty key"
    case .invalidKey(let key, let reason):
      "PostgresDelayedPreemptiveQueue: the key '\(key)' cannot be stored (\(reason)); "
        + "nothing was written"
    case .valueNotEncodable(let key, let reason):
      "PostgresDelayedPreemptiveQueue: the value for key '\(key)' cannot be stored as JSON "
        + "(\(reason)); nothing was written"
    case .valueNotDecodable(let key, let reason):
      "PostgresDelayedPreemptiveQueue: the stored value for key '\(key)' does not decode "
        + "(\(reason)); nothing was changed"
    case .databaseUnreachable(let host, let port, let reason):
      "PostgresDelayedPreemptiveQueue: cannot reach the database at \(host):\(port) (\(reason)); "
        + "nothing was written"
    case .outcomeUnknown(let key, let host, let port, let reason):
      "PostgresDelayedPreemptiveQueue: the database at \(host):\(port) did not confirm the call"
        + (key.map { " for key '\($0)'" } ?? "")
        + " (\(reason)); it may or may not have been applied, and retrying it is safe"
    case .databaseError(let operation, let sqlState, let reason):
      "PostgresDelayedPreemptiveQueue: the database refused \(operation) "
        + "(SQLSTATE \(sqlState): \(reason)); nothing was written"
    case .newerSchema(let found, let supported):
      "PostgresDelayedPreemptiveQueue: the database has schema version \(found), newer than "
        + "version \(supported) of this package; upgrade this replica"
    }
  }

  /// What went wrong, as a worker acts on it: the one classification of the package's errors.
  enum Kind: Sendable, Hashable {
    /// The database could not be reached, or did not confirm a call that was sent: wait and
    /// retry (the call may have been applied, so every statement a worker retries is written to
    /// be safe when its first attempt was applied).
    case outage
    /// The statement lost a deadlock or a serialization conflict (SQLSTATE class 40), or was
    /// refused a lock: it was rolled back, and sending it again is safe.
    case conflict
    /// Retrying cannot heal it: a schema that is newer or was never migrated (`42P01`), a
    /// missing permission (`42501`). A worker stops.
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
  }

  var kind: Kind {
    switch self {
    case .databaseUnreachable, .outcomeUnknown: return .outage
    case .newerSchema: return .permanent
    case .emptyKey, .invalidKey, .valueNotEncodable, .valueNotDecodable: return .input
    case .databaseError(_, let sqlState, _):
      if sqlState == "42P01" || sqlState == "42501" { return .permanent }
      if sqlState.hasPrefix("40") || sqlState == "55P03" { return .conflict }
      if ["22", "23", "54", "XX"].contains(where: sqlState.hasPrefix) { return .data }
      return .other
    }
  }

  /// Whether retrying cannot heal the error: a schema that is newer or was never migrated
  /// (`42P01`), a missing permission (`42501`). A worker stops for these and retries everything
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

  /// Whether the call was sent and may have been applied.
  var isUnconfirmed: Bool {
    if case .outcomeUnknown = self { return true }
    return false
  }

  /// The same error, for the caller that submitted `key`.
  func attributed(to key: String) -> Self {
    if case .outcomeUnknown(nil, let host, let port, let reason) = self {
      return .outcomeUnknown(key: key, host: host, port: port, reason: reason)
    }
    return self
  }
}
