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
  /// `42501` for a missing permission; `42883` or `42P01` for a schema that was never migrated,
  /// which ``isNotMigrated`` tells), and `reason` its message. Nothing was written.
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

  /// The same error, for the caller that submitted `key`.
  func attributed(to key: String) -> Self {
    if case .outcomeUnknown(nil, let host, let port, let reason) = self {
      return .outcomeUnknown(key: key, host: host, port: port, reason: reason)
    }
    return self
  }
}
