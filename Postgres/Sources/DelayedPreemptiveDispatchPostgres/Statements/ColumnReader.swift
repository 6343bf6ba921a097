import PostgresNIO

/// Reads a row's columns one at a time, in order, each as a concrete type: for the rows that
/// every run reads (a claim's), where `PostgresRow.decode` of a tuple of eleven columns left
/// each column's decoding generic (a lookup of its type's metadata per column and row).
struct ColumnReader {
  private var cells: PostgresRow.Iterator

  init(_ row: PostgresRow) {
    cells = row.makeIterator()
  }

  /// The next column, decoded as `type`. A row with fewer columns than read is a defect of the
  /// statement: it throws, as a row that does not decode does.
  mutating func next<Column: PostgresDecodable>(_ type: Column.Type = Column.self) throws -> Column
  {
    guard let cell = cells.next() else { throw MissingColumn(type: "\(Column.self)") }
    return try cell.decode(Column.self)
  }

  /// A statement's row had fewer columns than its reader expected.
  struct MissingColumn: Error, CustomStringConvertible {
    var type: String
    var description: String { "the row has no further column to decode as \(type)" }
  }
}
