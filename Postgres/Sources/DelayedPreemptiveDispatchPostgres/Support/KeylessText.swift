/// What a log line above debug level says of an error: the error's description without a key.
/// A key appears in the log only at debug level (rule P9), so that a service with millions of
/// keys can log at info; the package's own errors that name a key (``PostgresDelayedPreemptiveQueueError/valueNotDecodable(key:reason:)``
/// and the other key-bearing cases) are described here without it. A handler's own error is
/// logged as it describes itself: a handler that puts a key in its error puts it in the log.
func keyless(_ error: any Error) -> String {
  (error as? PostgresDelayedPreemptiveQueueError)?.keylessDescription ?? "\(error)"
}

extension PostgresDelayedPreemptiveQueueError {
  /// ``description`` without the key of the cases that carry one.
  var keylessDescription: String {
    switch self {
    case .invalidKey(_, let reason):
      "PostgresDelayedPreemptiveQueue: a key cannot be stored (\(reason)); nothing was written"
    case .valueNotEncodable(_, let reason):
      "PostgresDelayedPreemptiveQueue: a value cannot be stored as JSON (\(reason)); nothing "
        + "was written"
    case .valueNotDecodable(_, let reason):
      "PostgresDelayedPreemptiveQueue: a stored value does not decode (\(reason)); nothing was "
        + "changed"
    case .outcomeUnknown(_?, let host, let port, let reason):
      Self.outcomeUnknown(key: nil, host: host, port: port, reason: reason).description
    default:
      description
    }
  }
}
