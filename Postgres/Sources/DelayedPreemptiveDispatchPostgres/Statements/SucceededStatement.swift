import Foundation
import PostgresNIO

/// The end of successful runs, in one batch: deletes each row with no burst behind its head,
/// and makes the next burst the head of the others (the submissions during the run, or after a
/// burst reached `maxSubmissions`, run after it: runs of one key never overlap). A claim that
/// was taken over (expired lease), or whose end an earlier attempt of this statement already
/// recorded, matches nothing: the claims it returns are those whose end this statement
/// recorded. It locks its rows in key order first, as the renewal and the upsert do, so that
/// they cannot deadlock.
///
/// The writes find each locked row again by its claim, which no other row shares (each claim
/// draws its own `gen_random_uuid()`), on the index of claims, as `done` found it: a claim compares
/// 16 bytes where the primary key compares the keys' text under the database's collation, and
/// the delete of a drained row took 109,094 server instructions per row with the primary key
/// (`scripts/postgres-instructions.sh --drain`).
///
/// Every new value is computed in `done`, from the row as it was locked, never in the
/// `UPDATE`: a submission that committed after this statement's snapshot was taken, and before
/// the lock, changes the row the lock returns, while the `UPDATE` first forms its new row from
/// the snapshot's version. PostgreSQL checks `NOT NULL` on that first form, before it rereads
/// the locked row, so `value = b.later -> 0` on a snapshot whose `later` was still empty
/// failed with SQLSTATE 23502 (`PostgresUnconfirmedTests` makes that happen on purpose).
///
/// The run's start (`last_start`) moves from its claim to its handler's start (`handlerStart`;
/// $5 holds each claim's milliseconds since its handler started). Under `minimumSpacing` ($4,
/// milliseconds; 0 for none) the next burst is due no sooner than the spacing from that start,
/// and a row with no burst left is not deleted while that spacing lasts: it is kept `idle`, its
/// value dropped, due (for the claim that deletes it) when the spacing ends. Whether a row rests
/// is decided once, in `done`, so that the deletion and the update agree on one instant.
struct SucceededStatement: PostgresPreparedStatement {
  typealias Row = UUID

  static let sql = """
    WITH done AS (
      SELECT b.key, b.claim, b.later = '[]'::jsonb AS finished,
        \(SQLFragment.endOfRun(since: "d.since_start", spacing: "$4"))
      FROM dpd_bursts AS b,
        unnest($2::text[], $3::uuid[], $5::float8[]) AS d(key, claim, since_start)
      WHERE b.name = $1 AND b.key = d.key AND b.claim = d.claim
      ORDER BY b.key
      FOR UPDATE OF b
    ), deleted AS (
      DELETE FROM dpd_bursts AS b USING done
      WHERE b.name = $1 AND b.claim = done.claim AND done.finished AND NOT done.rests
      RETURNING done.claim
    ), rested AS (
      UPDATE dpd_bursts AS b SET \(SQLFragment.restingAfterRun("done"))
      FROM done
      WHERE b.name = $1 AND b.claim = done.claim AND done.finished AND done.rests
      RETURNING done.claim
    ), released AS (
      UPDATE dpd_bursts AS b SET \(SQLFragment.nextHeadAfterRun("done"))
      FROM done
      WHERE b.name = $1 AND b.claim = done.claim AND NOT done.finished
      RETURNING done.claim
    )
    SELECT claim FROM deleted UNION ALL SELECT claim FROM rested
    UNION ALL SELECT claim FROM released
    """
  static let bindingDataTypes: [PostgresDataType] = [
    .text, .textArray, .uuidArray, .float8, .float8Array,
  ]

  var name: String
  var keys: [String]
  var claims: [UUID]
  /// `options.minimumSpacing` in milliseconds; 0 for none.
  var minimumSpacingMilliseconds: Double = 0
  /// Each claim's `ClaimedBurst.millisecondsSinceHandlerStart`; empty: -1 for each.
  var millisecondsSinceHandlerStarts: [Double] = []

  func makeBindings() -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 5)
    bindings.append(name)
    bindings.append(PackedArray(keys))
    bindings.append(PackedArray(claims))
    bindings.append(minimumSpacingMilliseconds)
    bindings.append(
      PackedArray(
        millisecondsSinceHandlerStarts.count == claims.count
          ? millisecondsSinceHandlerStarts : Array(repeating: -1, count: claims.count)))
    return bindings
  }

  func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}
