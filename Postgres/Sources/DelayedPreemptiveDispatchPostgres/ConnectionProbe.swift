import PostgresNIO

// Placeholder until the connections branch lands.
final class ConnectionProbe: Sendable {
  init(configuration: PostgresClient.Configuration) {}
  func failure(within limit: Duration) async -> ConnectionFailure? { nil }
}
struct ConnectionFailure: Sendable, Hashable {
  var reason: String
  var sqlState: String?
}
