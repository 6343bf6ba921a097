import NIOCore
import PostgresNIO

/// Where a statement's bindings are encoded, in order: `PostgresBindings` for postgres-nio's
/// `execute`, or ``PreparedBindings`` for the statement that ``HeldConnection`` prepared
/// itself. A statement that is sent both ways lists its bindings once, in a method generic over
/// this protocol, so that the two encodings cannot drift apart.
protocol BindingEncoder {
  /// Appends `value`, or a null of its type.
  mutating func encode<Value: PostgresEncodable>(_ value: Value?) throws
}

extension PostgresBindings: BindingEncoder {
  mutating func encode<Value: PostgresEncodable>(_ value: Value?) throws {
    if let value { try append(value) } else { appendNull() }
  }
}

/// The bindings of a statement prepared by hand (``HeldConnection``): each value in its binary
/// encoding with its type, as `PostgresData`.
struct PreparedBindings: BindingEncoder {
  var values: [PostgresData] = []

  mutating func encode<Value: PostgresEncodable>(_ value: Value?) throws {
    guard let value else {
      values.append(PostgresData(type: Value.psqlType, formatCode: .binary))
      return
    }
    var buffer = ByteBuffer()
    try value.encode(into: &buffer, context: .default)
    values.append(PostgresData(type: Value.psqlType, formatCode: Value.psqlFormat, value: buffer))
  }
}
