import Foundation

/// Values travel as JSON text, stored as `jsonb` so that they can be read in SQL.
enum ValueCodec {
  static func encode<Value: Encodable>(_ value: Value, key: String) throws -> String {
    do {
      return String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    } catch {
      throw PostgresDelayedPreemptiveQueueError.valueNotEncodable(
        key: key, reason: String(describing: error))
    }
  }

  static func decode<Value: Decodable>(_ type: Value.Type, from json: String, key: String) throws
    -> Value
  {
    try JSONDecoder().decode(Value.self, from: Data(json.utf8))
  }
}

extension Duration {
  /// The duration in milliseconds, as the SQL takes it.
  var milliseconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) * 1000 + Double(attoseconds) / 1e15
  }
}

/// Stops the program with `message` when a caller broke a documented precondition; unlike
/// `precondition`, the message survives optimised builds. (The root package's own check is
/// `package`-visible only, so this package has its own.)
func requireArgument(
  _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
  line: UInt = #line
) {
  if !condition {
    fatalError("Precondition failed: \(message())", file: file, line: line)
  }
}
