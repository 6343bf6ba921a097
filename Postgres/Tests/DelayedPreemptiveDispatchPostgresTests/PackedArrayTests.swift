import Foundation
import NIOCore
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `PackedArray` writes an array binding in one piece: it must write exactly the bytes that
/// postgres-nio's own encoding of the `Array` writes, for every element type the statements
/// bind (text, uuid, float8), empty arrays and unusual elements included.
@Suite struct PostgresPackedArrayTests {
  static func bytes(_ value: some PostgresNonThrowingEncodable) -> [UInt8] {
    var buffer = ByteBuffer()
    value.encode(into: &buffer, context: .default)
    return Array(buffer.readableBytesView)
  }

  static let texts: [[String]] = [
    [], [""], ["k"], ["a", "", "ü€😀", String(repeating: "x", count: 1_000)],
    [String("a longer key than fifteen bytes, not stored inline".dropFirst(2)), "\"x\"", "[1]"],
  ]

  @Test(arguments: texts)
  func textArraysAreWrittenAsPostgresNIOWritesThem(_ texts: [String]) {
    #expect(Self.bytes(PackedArray(texts)) == Self.bytes(texts))
    #expect(PackedArray<String>.psqlType == [String].psqlType)
    #expect(PackedArray<String>.psqlFormat == [String].psqlFormat)
  }

  @Test(arguments: [0, 1, 2, 33])
  func uuidArraysAreWrittenAsPostgresNIOWritesThem(_ count: Int) {
    let claims = (0..<count).map { _ in UUID() }
    #expect(Self.bytes(PackedArray(claims)) == Self.bytes(claims))
    #expect(PackedArray<UUID>.psqlType == [UUID].psqlType)
  }

  @Test func float8ArraysAreWrittenAsPostgresNIOWritesThem() {
    let values: [[Double]] = [
      [], [-1], [0, -0.0, 1.5, -1e308, .infinity, -.infinity, .nan, .leastNonzeroMagnitude],
    ]
    for doubles in values {
      #expect(Self.bytes(PackedArray(doubles)) == Self.bytes(doubles))
    }
    #expect(PackedArray<Double>.psqlType == [Double].psqlType)
  }
}

/// The server reads what `PackedArray` writes as the arrays it was given.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresPackedArrayServerTests {
  @Test func theServerReadsEachArrayAsGiven() async throws {
    try await TestDatabase.withClient { client, _ in
      for texts in PostgresPackedArrayTests.texts {
        var bindings = PostgresBindings()
        bindings.append(PackedArray(texts))
        let rows = try await client.query(
          PostgresQuery(unsafeSQL: "SELECT $1::text[], cardinality($1::text[])", binds: bindings))
        for try await (read, count) in rows.decode(([String], Int).self) {
          #expect(read == texts)
          #expect(count == texts.count)
        }
      }
      let claims = (0..<5).map { _ in UUID() }
      var bindings = PostgresBindings()
      bindings.append(PackedArray(claims))
      bindings.append(PackedArray([1.5, -0.0, .infinity]))
      let rows = try await client.query(
        PostgresQuery(
          unsafeSQL: "SELECT $1::uuid[], $2::float8[], array_lower($1::uuid[], 1)", binds: bindings)
      )
      for try await (uuids, doubles, lower) in rows.decode(([UUID], [Double], Int).self) {
        #expect(uuids == claims)
        #expect(doubles == [1.5, -0.0, .infinity])
        #expect(lower == 1)
      }
    }
  }
}
