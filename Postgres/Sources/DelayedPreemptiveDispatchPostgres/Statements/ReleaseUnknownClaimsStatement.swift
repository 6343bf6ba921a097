import Foundation
import PostgresNIO

/// Releases the claims that this worker (`owner`, unique to one `run`) holds in the database but
/// does not know of: those of a claim statement that was applied but whose answer was lost (a
/// restart ended the session, or no answer came in time). `known` is every claim the worker
/// knows it holds; a row claimed by `owner` under any other claim never ran here, so it becomes
/// due again at once, and its attempt is given back. A row that another worker took over meanwhile
/// has another owner and is left alone. Returns the keys it released.
struct ReleaseUnknownClaimsStatement: PostgresPreparedStatement {
  typealias Row = String

  static let sql = """
    UPDATE dpd_bursts SET \(SQLFragment.releasedClaim),
      attempts = greatest(attempts - 1, 0), due_at = least(due_at, dpd_now())
    WHERE name = $1 AND owner = $2 AND claim IS NOT NULL AND NOT (claim = ANY($3))
    RETURNING key
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .text, .uuidArray]

  var name: String
  var owner: String
  var known: [UUID]

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 3)
    bindings.append(name)
    bindings.append(owner)
    bindings.append(PackedArray(known))
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(String.self) }
}
