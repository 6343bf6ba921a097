import Foundation
import NIOCore
import PostgresNIO

/// An array binding in PostgreSQL's binary array format, written into the statement's buffer in
/// one piece: the same bytes as postgres-nio's own encoding of an `Array` (the tests compare
/// them), at a fraction of its cost.
///
/// postgres-nio writes an array element by element, three `ByteBuffer` calls each (a length
/// placeholder, the bytes, the length set afterwards), and each call checks its exclusive access
/// to the buffer's storage at run time: the three arrays of a batch of runs' ends cost about
/// 3,200 worker instructions per run, some 1,100 per element
/// (`scripts/postgres-worker-instructions.sh`). This one works out the size first, then writes
/// the header and every element through one pointer.
///
/// The format: the number of dimensions (1, or 0 for an empty array), a flag for nulls (0: no
/// element is null), the element type's OID, then for the one dimension its length and its lower
/// bound (1), then each element as its length (a 32-bit integer) and its bytes; every integer
/// big-endian.
struct PackedArray<Element: PackedArrayElement>: PostgresNonThrowingEncodable {
  static var psqlType: PostgresDataType { Element.arrayType }
  static var psqlFormat: PostgresFormat { .binary }

  var elements: [Element]

  init(_ elements: [Element]) {
    self.elements = elements
  }

  func encode<JSONEncoder: PostgresJSONEncoder>(
    into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
  ) {
    var size = elements.isEmpty ? 12 : 20
    for element in elements { size += 4 + element.packedSize }
    buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
      var offset = 0
      func put(_ value: UInt32) {
        raw.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
      }
      put(elements.isEmpty ? 0 : 1)
      put(0)
      put(Element.elementType.rawValue)
      if !elements.isEmpty {
        put(UInt32(elements.count))
        put(1)
      }
      for element in elements {
        let length = element.packedSize
        put(UInt32(length))
        element.pack(into: UnsafeMutableRawBufferPointer(rebasing: raw[offset..<offset + length]))
        offset += length
      }
      precondition(offset == size, "PackedArray wrote \(offset) bytes, not the \(size) it sized")
      return size
    }
  }
}

/// An element of a ``PackedArray``: its types, and its bytes in PostgreSQL's binary format.
protocol PackedArrayElement {
  /// The element's type, whose OID the array's header names.
  static var elementType: PostgresDataType { get }
  /// The type of an array of it.
  static var arrayType: PostgresDataType { get }
  /// How many bytes ``pack(into:)`` writes.
  var packedSize: Int { get }
  /// Writes the element's ``packedSize`` bytes at the start of `bytes`.
  func pack(into bytes: UnsafeMutableRawBufferPointer)
}

extension String: PackedArrayElement {
  static var elementType: PostgresDataType { .text }
  static var arrayType: PostgresDataType { .textArray }
  var packedSize: Int { utf8.count }

  func pack(into bytes: UnsafeMutableRawBufferPointer) {
    var text = self
    text.withUTF8 { utf8 in
      guard let base = utf8.baseAddress, utf8.count > 0 else { return }
      bytes.baseAddress!.copyMemory(from: base, byteCount: utf8.count)
    }
  }
}

extension UUID: PackedArrayElement {
  static var elementType: PostgresDataType { .uuid }
  static var arrayType: PostgresDataType { .uuidArray }
  var packedSize: Int { 16 }

  func pack(into bytes: UnsafeMutableRawBufferPointer) {
    withUnsafeBytes(of: uuid) {
      bytes.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 16)
    }
  }
}

extension Double: PackedArrayElement {
  static var elementType: PostgresDataType { .float8 }
  static var arrayType: PostgresDataType { .float8Array }
  var packedSize: Int { 8 }

  func pack(into bytes: UnsafeMutableRawBufferPointer) {
    bytes.storeBytes(of: bitPattern.bigEndian, as: UInt64.self)
  }
}
