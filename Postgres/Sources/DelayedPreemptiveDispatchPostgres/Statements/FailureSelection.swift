import PostgresNIO

/// Which kept failures of a queue (`dpd_failures`) an operator's call acts on: all of a key's,
/// or one by its id. The statements that take one (``RetryFailuresStatement``,
/// ``DiscardFailuresStatement``) bind it as `$2`.
enum FailureSelection: Sendable, CustomStringConvertible {
  case key(String)
  case id(Int64)

  /// The condition on `dpd_failures` that picks the selected failures.
  var condition: String {
    switch self {
    case .key: "key = $2"
    case .id: "id = $2"
    }
  }

  /// The key, when it selects a key's failures.
  var key: String? {
    if case .key(let key) = self { return key }
    return nil
  }

  /// The key or the id, as the debug log lines name it.
  var description: String {
    switch self {
    case .key(let key): key
    case .id(let id): "\(id)"
    }
  }

  /// Appends the selection as `$2`.
  func append(to bindings: inout PostgresBindings) {
    switch self {
    case .key(let key): bindings.append(key)
    case .id(let id): bindings.append(id)
    }
  }
}
