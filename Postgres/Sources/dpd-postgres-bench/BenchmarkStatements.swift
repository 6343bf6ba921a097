import DelayedPreemptiveDispatchPostgres
import Foundation

/// The package's statements in the form this benchmark needs.
enum BenchmarkStatements {
  /// `delay`'s statement as a pgbench script for one submission per transaction: the same SQL,
  /// with the bindings of a single-row batch written in (queue `name`, a fresh key per
  /// transaction drawn into pgbench's `:k`, the value `1`, a one-hour delay, `.extend`, no
  /// `maxWait`, no `maxSubmissions`, `.replace`, no `minimumSpacing`; without a trace context,
  /// as without a tracer). The benchmark prints it so that pgbench runs the statement the
  /// package sends, not a copy that could drift from it.
  static func pgbenchScript(name: String) -> String {
    precondition(
      name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" },
      "BenchmarkStatements.pgbenchScript: name must be letters, digits, '-' or '_', got \(name)")
    let bindings = [
      "$1": "'\(name)'::text", "$2": "ARRAY['k' || :k]::text[]", "$3": "ARRAY['1']::text[]",
      "$4": "ARRAY[3600000]::float8[]", "$5": "false", "$6": "NULL::float8",
      "$7": "NULL::int8", "$8": "false", "$9": "0::float8",
    ]
    var script = StatementText.delay
    // $1 to $9 only: no placeholder is a prefix of another.
    for (placeholder, literal) in bindings {
      script = script.replacingOccurrences(of: placeholder, with: literal)
    }
    return "\\set k random(1, 1000000000)\n" + script + ";\n"
  }
}
