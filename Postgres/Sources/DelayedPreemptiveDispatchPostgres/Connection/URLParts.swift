/// The pieces of a `postgres://` URL, split without Foundation's URL so that percent-escapes in
/// passwords behave the same on every platform.
struct URLParts {
  /// Why a URL does not split; the reason never quotes the credentials.
  struct Problem: Error {
    var reason: String
  }

  /// The query parameters ``init(_:)`` understands; any other is a ``Problem``.
  static let parameters = ["sslmode", "sslrootcert"]

  var user: String
  var password: String?
  var host: String
  var port: Int
  var database: String?
  /// `sslmode`, nil when the URL does not give one.
  var sslMode: SSLMode?
  /// `sslrootcert`: the path of a PEM file of certificate authorities.
  var sslRootCert: String?

  /// Splits `url`; throws a ``Problem`` that says what is wrong with it.
  init(_ url: String) throws(Problem) {
    guard let schemeEnd = url.range(of: "://"),
      ["postgres", "postgresql"].contains(url[..<schemeEnd.lowerBound])
    else { throw Problem(reason: "it does not start with postgres:// or postgresql://") }
    var rest = Substring(url[schemeEnd.upperBound...])
    var query = Substring("")
    if let mark = rest.firstIndex(of: "?") {
      query = rest[rest.index(after: mark)...]
      rest = rest[..<mark]
    }
    guard let at = rest.lastIndex(of: "@") else {
      throw Problem(reason: "it names no user (postgres://user@host/database)")
    }
    try self.init(credentials: rest[..<at], location: rest[rest.index(after: at)...])
    try readParameters(query)
  }

  private init(credentials: Substring, location: Substring) throws(Problem) {
    let userAndPassword = credentials.split(
      separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
    guard let user = userAndPassword.first.flatMap(\.removingPercentEscapes), !user.isEmpty else {
      throw Problem(reason: "the user name is empty or has a malformed %-escape")
    }
    self.user = user
    if userAndPassword.count == 2 {
      guard let password = userAndPassword[1].removingPercentEscapes else {
        throw Problem(reason: "the password has a malformed %-escape")
      }
      self.password = password
    }
    var location = location
    if let slash = location.firstIndex(of: "/") {
      let name = location[location.index(after: slash)...]
      database = name.isEmpty ? nil : String(name)
      location = location[..<slash]
    }
    let hostAndPort = location.split(separator: ":", maxSplits: 1)
    guard let host = hostAndPort.first, !host.isEmpty else {
      throw Problem(reason: "it names no host")
    }
    self.host = String(host)
    port = 5432
    if hostAndPort.count == 2 {
      guard let port = Int(hostAndPort[1]), (1...65535).contains(port) else {
        throw Problem(reason: "the port is not a number in 1...65535")
      }
      self.port = port
    }
  }

  /// Reads `sslmode` and `sslrootcert` from the query; throws for anything else, and for an
  /// `sslrootcert` without an `sslmode` (this package's default, `disable`, differs from libpq's,
  /// `prefer`, so that such a URL means something else to each).
  private mutating func readParameters(_ query: Substring) throws(Problem) {
    var seen: Set<Substring> = []
    for pair in query.split(separator: "&") {
      guard let equals = pair.firstIndex(of: "=") else {
        throw Problem(reason: "the parameter \"\(pair)\" has no value (name=value)")
      }
      let name = pair[..<equals]
      guard Self.parameters.contains(String(name)) else {
        throw Problem(
          reason: "unknown parameter \"\(name)\" (supported: "
            + Self.parameters.joined(separator: ", ") + ")")
      }
      guard seen.insert(name).inserted else {
        throw Problem(reason: "the parameter \"\(name)\" is given twice")
      }
      guard let value = pair[pair.index(after: equals)...].removingPercentEscapes else {
        throw Problem(reason: "the value of \"\(name)\" has a malformed %-escape")
      }
      if name == "sslmode" {
        sslMode = try SSLMode(parsing: value)
      } else {
        sslRootCert = value
      }
    }
    if sslRootCert != nil, sslMode == nil {
      throw Problem(
        reason: "sslrootcert is given without sslmode: add sslmode=verify-full (or verify-ca, "
          + "require) to check the server's certificate with it; without sslmode this package "
          + "uses no TLS, where libpq would use prefer")
    }
  }
}

extension SSLMode {
  /// Reads an `sslmode` value; throws a problem that names it when it is not one of ours.
  fileprivate init(parsing value: String) throws(URLParts.Problem) {
    let known = SSLMode.allCases.map(\.rawValue).joined(separator: ", ")
    guard let mode = SSLMode(rawValue: value) else {
      let unsupported = value == "allow" ? "is not supported" : "is unknown"
      throw URLParts.Problem(reason: "sslmode \"\(value)\" \(unsupported) (use one of \(known))")
    }
    self = mode
  }
}

extension StringProtocol {
  /// Decodes `%XX` escapes; returns nil for a malformed escape.
  var removingPercentEscapes: String? {
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
