/// The typed errors of ``PostgresDelayedPreemptiveQueue`` (rule P6): bad input and an unusable
/// database. Each one is thrown before anything is written, so a failed call loses nothing that
/// was stored before it.
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
  /// The value for `key` could not be encoded as JSON (for instance a `Double.nan`); nothing
  /// was written.
  case valueNotEncodable(key: String, reason: String)
  /// The database at `host`:`port` could not be reached; `reason` is the driver's description.
  case databaseUnreachable(host: String, port: Int, reason: String)
  /// The database holds schema `found`, newer than the `supported` version of this package:
  /// a newer release migrated it. Upgrade this replica rather than write to that schema.
  case newerSchema(found: Int, supported: Int)

  public var description: String {
    switch self {
    case .emptyKey:
      "PostgresDelayedPreemptiveQueue: the key is empty; give every burst a non-empty key"
    case .valueNotEncodable(let key, let reason):
      "PostgresDelayedPreemptiveQueue: the value for key '\(key)' does not encode as JSON "
        + "(\(reason)); nothing was written"
    case .databaseUnreachable(let host, let port, let reason):
      "PostgresDelayedPreemptiveQueue: cannot reach the database at \(host):\(port) (\(reason))"
    case .newerSchema(let found, let supported):
      "PostgresDelayedPreemptiveQueue: the database has schema version \(found), newer than "
        + "version \(supported) of this package; upgrade this replica"
    }
  }
}
