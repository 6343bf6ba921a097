import Foundation
import Testing

/// A third throwaway server for the TLS tests, which give it certificates they make with
/// openssl: `DPD_POSTGRES_TLS_URL`, and `DPD_POSTGRES_TLS_STATE`, the state file of
/// `scripts/postgres.sh` that controls it. `.ci/run` starts it; under CI a missing one fails
/// `PostgresEnvironmentTests`.
enum TLSServer {
  static let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_TLS_URL"] ?? ""
  static let state = ProcessInfo.processInfo.environment["DPD_POSTGRES_TLS_STATE"] ?? ""
  static var isConfigured: Bool { !url.isEmpty && !state.isEmpty }
  static let skipReason: Comment = """
    DPD_POSTGRES_TLS_URL or DPD_POSTGRES_TLS_STATE is unset; run: export \
    DPD_POSTGRES_TLS_STATE=/tmp/dpd-tls.state DPD_POSTGRES_TLS_URL=$(DPD_POSTGRES_STATE=\
    /tmp/dpd-tls.state scripts/postgres.sh start)
    """

  /// The server's port, from its URL.
  static var port: Int {
    let afterHost = url.split(separator: "@").last.map(String.init) ?? ""
    let hostAndPort = afterHost.split(separator: "/").first ?? ""
    return Int(hostAndPort.split(separator: ":").last ?? "") ?? 0
  }

  /// Makes the server serve TLS with `certificate`, or no TLS with nil.
  static func serve(_ certificate: Certificates.Server?) async throws {
    if let certificate {
      try await PostgresScript.run(
        ["tls", certificate.certificate, certificate.key], state: state)
    } else {
      try await PostgresScript.run(["tls", "off"], state: state)
    }
  }

  /// `postgres://postgres@HOST:PORT/dpd` with `query` appended.
  static func url(host: String, query: String) -> String {
    "postgres://postgres@\(host):\(port)/dpd" + (query.isEmpty ? "" : "?" + query)
  }
}

/// Certificates made with openssl in a temporary directory, once per test process: a
/// certificate authority the tests trust (`authority`), another one (`otherAuthority`), and two
/// server certificates signed by the first: one for `localhost` and `127.0.0.1`, one for
/// `db.elsewhere.invalid` only.
struct Certificates: Sendable {
  /// A server's certificate and key, as PEM files.
  struct Server: Sendable {
    var certificate: String
    var key: String
  }

  var authority: String
  var otherAuthority: String
  var localhost: Server
  var elsewhere: Server

  static func make() async throws -> Certificates {
    try await made.value
  }

  private static let made = Task { try await create() }

  private static func create() async throws -> Certificates {
    let directory = NSTemporaryDirectory() + "dpd-tls-\(UUID().uuidString.prefix(8))/"
    try FileManager.default.createDirectory(
      atPath: directory, withIntermediateDirectories: true)
    func openssl(_ arguments: [String]) async throws {
      let run = try await Command.run("openssl", arguments)
      #expect(run.status == 0, "openssl \(arguments): \(run.errors)")
      if run.status != 0 { throw CocoaError(.fileWriteUnknown) }
    }
    func key(_ name: String) -> [String] {
      [
        "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
        directory + name + ".key",
      ]
    }
    for (name, subject) in [("ca", "/CN=dpd test CA"), ("other-ca", "/CN=dpd other CA")] {
      try await openssl(
        ["req", "-x509"] + key(name)
          + ["-out", directory + name + ".pem", "-days", "2", "-subj", subject])
    }
    for (name, names) in [
      ("localhost", "DNS:localhost,IP:127.0.0.1"), ("elsewhere", "DNS:db.elsewhere.invalid"),
    ] {
      try await openssl(
        ["req"] + key(name) + ["-out", directory + name + ".csr", "-subj", "/CN=\(name)"])
      let extensions = directory + name + ".ext"
      try "subjectAltName=\(names)\n".write(toFile: extensions, atomically: true, encoding: .utf8)
      try await openssl([
        "x509", "-req", "-in", directory + name + ".csr", "-CA", directory + "ca.pem", "-CAkey",
        directory + "ca.key", "-CAcreateserial", "-out", directory + name + ".pem", "-days", "2",
        "-extfile", extensions,
      ])
    }
    func server(_ name: String) -> Server {
      Server(certificate: directory + name + ".pem", key: directory + name + ".key")
    }
    return Certificates(
      authority: directory + "ca.pem", otherAuthority: directory + "other-ca.pem",
      localhost: server("localhost"), elsewhere: server("elsewhere"))
  }
}
