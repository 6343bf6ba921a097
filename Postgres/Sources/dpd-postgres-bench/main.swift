import DelayedPreemptiveDispatchPostgres
import PostgresNIO
let config = try PostgresURL.configuration("postgres://postgres@127.0.0.1:1/dpd")
let client = PostgresClient(configuration: config)
func dump(_ value: Any, depth: Int, indent: String) {
  if depth == 0 { return }
  for child in Mirror(reflecting: value).children { print(indent, child.label ?? "?", type(of: child.value)); dump(child.value, depth: depth - 1, indent: indent + "  ") }
}
dump(client, depth: 3, indent: "")
