import Foundation
import PostgresNIO

/// Extends the leases of all the runs one worker holds, in one statement on the index on
/// `claim`, locking its rows in key order. Returns the claims it renewed: a claim missing from
/// the answer was taken over. Under `minimumSpacing` ($4) a lease ends no sooner than the spacing
/// from the run's start, as the claim set it: a takeover is a run, and keeps the spacing too.
struct RenewStatement: PostgresPreparedStatement {
  typealias Row = UUID

  static let sql = """
    WITH held AS (
      SELECT key FROM dpd_bursts WHERE claim = ANY($2) AND name = $1
      ORDER BY key
      FOR UPDATE
    )
    UPDATE dpd_bursts AS b SET due_at = greatest(
        dpd_now() + $3 * interval '1 millisecond', \(SQLFragment.spacedFrom("$4")))
    FROM held WHERE b.name = $1 AND b.key = held.key
    RETURNING b.claim
    """
  static let bindingDataTypes: [PostgresDataType] = [.text, .uuidArray, .float8, .float8]

  var name: String
  var claims: [UUID]
  var leaseMilliseconds: Double
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 4)
    bindings.append(name)
    bindings.append(PackedArray(claims))
    bindings.append(leaseMilliseconds)
    bindings.append(minimumSpacingMilliseconds)
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}
