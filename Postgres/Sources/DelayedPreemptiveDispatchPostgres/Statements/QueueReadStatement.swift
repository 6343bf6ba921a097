import PostgresNIO

/// A statement that reads the queue named `$1` and takes nothing else: its binding is the name.
protocol QueueReadStatement: PostgresPreparedStatement {
  var name: String { get }
}

extension QueueReadStatement {
  static var bindingDataTypes: [PostgresDataType] { [.text] }

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 1)
    bindings.append(name)
    return bindings
  }
}
