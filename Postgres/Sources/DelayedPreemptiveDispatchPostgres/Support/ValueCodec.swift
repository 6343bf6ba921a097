@_spi(Preconditions) import DelayedPreemptiveDispatch
import Foundation

/// Values travel as JSON text, stored as `jsonb` so that they can be read in SQL.
enum ValueCodec {
  private static let decoder = JSONDecoder()

  /// The string that `json` holds when it is a JSON string with no escape in it (no backslash):
  /// its text between the quotes is then the string itself. nil for anything else, which
  /// `JSONDecoder` reads: another JSON value, or a string with an escape.
  static func unescapedString(_ json: String) -> String? {
    let utf8 = json.utf8
    guard utf8.count >= 2, utf8.first == UInt8(ascii: "\""), utf8.last == UInt8(ascii: "\"")
    else { return nil }
    let inner = utf8.dropFirst().dropLast()
    guard
      !inner.contains(where: {
        $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 < 0x20
      })
    else { return nil }
    return String(inner)
  }

  /// The value's JSON; throws `valueNotEncodable` when it does not encode, or when it holds a
  /// NUL character (the escape `\u0000`), which `jsonb` refuses.
  static func encode<Value: Encodable>(_ value: Value, key: String) throws -> String {
    let json: String
    do {
      json = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    } catch {
      throw PostgresDelayedPreemptiveQueueError.valueNotEncodable(
        key: key, reason: String(describing: error))
    }
    if holdsNUL(json) {
      throw PostgresDelayedPreemptiveQueueError.valueNotEncodable(
        key: key, reason: "it holds a NUL character (\\u0000), which PostgreSQL's jsonb refuses")
    }
    return json
  }

  /// Throws `valueNotEncodable` unless `json` (the encoder's output) is a JSON array, as a
  /// queue with `merge: .append` needs.
  static func requireArray(_ json: String, key: String) throws {
    guard json.utf8.first == UInt8(ascii: "[") else {
      let kind =
        switch json.utf8.first {
        case UInt8(ascii: "{"): "a JSON object"
        case UInt8(ascii: "\""): "a JSON string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): "a JSON boolean"
        case UInt8(ascii: "n"): "JSON null"
        default: "a JSON number"
        }
      throw PostgresDelayedPreemptiveQueueError.valueNotEncodable(
        key: key,
        reason: "merge: .append needs a value that encodes as a JSON array; it encodes "
          + "as \(kind)")
    }
  }

  /// Whether JSON text holds the escape of a NUL character: `\u0000` after an even number of
  /// backslashes (an odd number would make the first one part of an escaped backslash).
  static func holdsNUL(_ json: String) -> Bool {
    let bytes = Array(json.utf8)
    let escape = Array("u0000".utf8)
    var index = 0
    while index < bytes.count {
      guard bytes[index] == UInt8(ascii: "\\") else {
        index += 1
        continue
      }
      // An escape: a backslash and the character after it.
      if index + 6 <= bytes.count, Array(bytes[(index + 1)..<(index + 6)]) == escape {
        return true
      }
      index += 2
    }
    return false
  }

  /// The value stored as `json`; throws `valueNotDecodable` when it does not decode.
  ///
  /// A `String` whose JSON has no escape is read from the JSON text directly: every run decodes
  /// its value, and `JSONDecoder` took 2.5 µs for a short string here, a twentieth of a
  /// drained run's CPU. Any other value, and a string with an escape, goes through one
  /// `JSONDecoder` that all runs share (it is `Sendable`, and holds no state between calls).
  static func decode<Value: Decodable>(_ type: Value.Type, from json: String, key: String) throws
    -> Value
  {
    if Value.self == String.self, let string = unescapedString(json) {
      return string as! Value
    }
    do {
      return try decoder.decode(Value.self, from: Data(json.utf8))
    } catch {
      throw PostgresDelayedPreemptiveQueueError.valueNotDecodable(
        key: key, reason: String(describing: error))
    }
  }
}

extension Duration {
  /// The duration in milliseconds, as the SQL takes it, at most 200 years (durations saturate,
  /// never a raw SQL error): beyond that, PostgreSQL's `interval` and `timestamptz` overflow, and
  /// in-process such a duration already means "never, unless flushed".
  var milliseconds: Double {
    let (seconds, attoseconds) = components
    return min(Double(seconds) * 1000 + Double(attoseconds) / 1e15, Self.longestMilliseconds)
  }

  /// 200 years of 365.25 days, in milliseconds.
  static var longestMilliseconds: Double { 200 * 365.25 * 86_400_000 }
}
