import PostgresNIO

/// Turns a connection URL (`postgres://user[:password]@host[:port]/database`) into a
/// `PostgresClient.Configuration`, as `scripts/postgres.sh start` prints and as the worker reads
/// from `DPD_POSTGRES_URL`.
///
/// TLS is off unless the URL asks for it with `?sslmode=require`.
///
/// ```swift
/// let configuration = try PostgresURL.configuration("postgres://postgres@127.0.0.1:5432/dpd")
/// let client = PostgresClient(configuration: configuration)
/// ```
public enum PostgresURL {
  /// Thrown when the URL is not of the form `postgres://user[:password]@host[:port]/database`.
  public struct InvalidURL: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text that did not parse.
    public var url: String
    public var description: String {
      "not a PostgreSQL URL (postgres://user[:password]@host[:port]/database): \(url)"
    }
  }

  /// Parses `url` into a client configuration; throws ``InvalidURL`` when it does not parse.
  public static func configuration(_ url: String) throws -> PostgresClient.Configuration {
    guard let parts = URLParts(url) else { throw InvalidURL(url: url) }
    return PostgresClient.Configuration(
      host: parts.host, port: parts.port, username: parts.user, password: parts.password,
      database: parts.database,
      tls: parts.requireTLS ? .require(.makeClientConfiguration()) : .disable)
  }
}

/// The pieces of a `postgres://` URL, split without Foundation's URL so that percent-escapes in
/// passwords behave the same on every platform.
struct URLParts {
  var user: String
  var password: String?
  var host: String
  var port: Int
  var database: String?
  var requireTLS: Bool

  init?(_ url: String) {
    guard let schemeEnd = url.range(of: "://"),
      ["postgres", "postgresql"].contains(url[..<schemeEnd.lowerBound])
    else { return nil }
    var rest = Substring(url[schemeEnd.upperBound...])
    var query = Substring("")
    if let mark = rest.firstIndex(of: "?") {
      query = rest[rest.index(after: mark)...]
      rest = rest[..<mark]
    }
    guard let at = rest.lastIndex(of: "@") else { return nil }
    let credentials = rest[..<at]
    var location = rest[rest.index(after: at)...]
    let userAndPassword = credentials.split(separator: ":", maxSplits: 1).map(String.init)
    guard let user = userAndPassword.first?.removingPercentEscapes, !user.isEmpty else {
      return nil
    }
    self.user = user
    self.password = userAndPassword.count == 2 ? userAndPassword[1].removingPercentEscapes : nil
    if let slash = location.firstIndex(of: "/") {
      let name = location[location.index(after: slash)...]
      database = name.isEmpty ? nil : String(name)
      location = location[..<slash]
    }
    let hostAndPort = location.split(separator: ":", maxSplits: 1)
    guard let host = hostAndPort.first, !host.isEmpty else { return nil }
    self.host = String(host)
    if hostAndPort.count == 2 {
      guard let port = Int(hostAndPort[1]), (1...65535).contains(port) else { return nil }
      self.port = port
    } else {
      self.port = 5432
    }
    requireTLS = query.split(separator: "&").contains("sslmode=require")
  }
}

extension String {
  /// Decodes `%XX` escapes; returns nil for a malformed escape.
  fileprivate var removingPercentEscapes: String? {
    var bytes: [UInt8] = []
    var iterator = utf8.makeIterator()
    while let byte = iterator.next() {
      guard byte == UInt8(ascii: "%") else {
        bytes.append(byte)
        continue
      }
      guard let high = iterator.next(), let low = iterator.next(),
        let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
      else { return nil }
      bytes.append(value)
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
