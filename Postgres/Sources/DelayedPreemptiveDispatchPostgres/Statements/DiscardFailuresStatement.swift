import PostgresNIO

/// `discardFailure`: deletes the kept failures of the queue that `selection` picks, with their
/// values and last errors; the key's waiting or running bursts are not touched. Returns how
/// many it deleted.
struct DiscardFailuresStatement {
  var name: String
  var selection: FailureSelection

  var query: PostgresQuery {
    var bindings = PostgresBindings(capacity: 2)
    bindings.append(name)
    selection.append(to: &bindings)
    return PostgresQuery(
      unsafeSQL: """
        WITH discarded AS (
          DELETE FROM dpd_failures WHERE name = $1 AND \(selection.condition) RETURNING 1
        )
        SELECT count(*) FROM discarded
        """, binds: bindings)
  }
}
