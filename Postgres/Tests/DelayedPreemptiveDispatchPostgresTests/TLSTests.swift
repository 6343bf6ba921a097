import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P12 against a real server with real certificates, made here with openssl: every
/// `sslmode`, with and without `sslrootcert`, by IP address and by name, against a certificate
/// for the host, one for another host, and a server without TLS, connects as libpq (psql)
/// connects, but where the docs say why not; and a refused certificate says which check failed
/// and what to give.
@Suite(.serialized, .enabled(if: TLSServer.isConfigured, TLSServer.skipReason))
struct PostgresTLSTests {
  /// How a connection attempt ended: with TLS, without, refused, or a URL not taken.
  enum Outcome: Equatable, CustomStringConvertible {
    case tls
    case plain
    case refused(String)
    case invalidURL(String)

    var description: String {
      switch self {
      case .tls: "TLS"
      case .plain: "plain"
      case .refused(let reason): "refused (\(reason))"
      case .invalidURL(let reason): "invalid URL (\(reason))"
      }
    }

    /// The outcome without its reason, for comparisons.
    var kind: String {
      switch self {
      case .tls: "TLS"
      case .plain: "plain"
      case .refused: "refused"
      case .invalidURL: "invalid URL"
      }
    }
  }

  static let sslQuery = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

  /// Connects as this package does (the configuration that `PostgresURL` makes, turned into a
  /// connection as the client's pool and the probe turn it).
  static func ours(_ url: String) async -> Outcome {
    let configuration: PostgresClient.Configuration
    do {
      configuration = try PostgresURL.configuration(url)
    } catch let error as PostgresURL.InvalidURL {
      return .invalidURL(error.reason)
    } catch {
      return .invalidURL("\(error)")
    }
    let logger = Logger(label: "tls-test") { _ in SwiftLogNoOpLogHandler() }
    do {
      guard let settings = try configuration.connectionConfiguration() else {
        return .refused("the TLS mode could not be read")
      }
      let connection = try await PostgresConnection.connect(
        configuration: settings, id: 1, logger: logger)
      defer { Task { try? await connection.close() } }
      var ssl: Bool?
      for try await row in try await connection.query(
        PostgresQuery(unsafeSQL: sslQuery), logger: logger)
      {
        ssl = try row.decode(Bool.self)
      }
      return ssl == true ? .tls : .plain
    } catch {
      let failure = ConnectionFailure(
        connecting: error, password: nil, configuration: configuration)
      return .refused(failure?.reason ?? "\(String(reflecting: error))")
    }
  }

  /// Connects with libpq, through psql, with no settings from the environment or a home folder.
  static func libpq(_ url: String) async throws -> Outcome {
    let home = NSTemporaryDirectory() + "dpd-psql-home"
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    let environment = [
      "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": home,
    ]
    let run = try await Command.run(
      "psql", [url, "-X", "-w", "-At", "-c", sslQuery], environment: environment,
      timeout: .seconds(30))
    if run.status != 0 {
      return .refused(run.errors.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return run.output.hasPrefix("t") ? .tls : .plain
  }

  @Test func everySSLModeConnectsAsLibpqDoes() async throws {
    let certificates = try await Certificates.make()
    let servers: [(String, Certificates.Server?)] = [
      ("certificate for localhost and 127.0.0.1", certificates.localhost),
      ("certificate for db.elsewhere.invalid", certificates.elsewhere),
      ("no TLS", nil),
    ]
    var table: [String] = []
    for (serverName, certificate) in servers {
      try await TLSServer.serve(certificate)
      for host in ["127.0.0.1", "localhost"] {
        for mode in ["", "disable", "prefer", "require", "verify-ca", "verify-full"] {
          for (rootName, root) in [
            ("", nil), ("right CA", certificates.authority),
            ("other CA", certificates.otherAuthority),
          ] {
            var query: [String] = []
            if !mode.isEmpty { query.append("sslmode=\(mode)") }
            if let root { query.append("sslrootcert=\(root)") }
            let url = TLSServer.url(host: host, query: query.joined(separator: "&"))
            let ours = await Self.ours(url)
            let libpq = try await Self.libpq(url)
            let line =
              "\(serverName), \(host), sslmode=\(mode.isEmpty ? "(none)" : mode), "
              + "sslrootcert=\(root == nil ? "(none)" : rootName): ours \(ours), libpq "
              + "\(libpq.kind)"
            table.append(line)
            switch (mode, root) {
            case ("", nil):
              // The one default that differs: no TLS here, libpq's prefer there.
              #expect(ours == .plain, "\(line): \(ours)")
            case ("", _):
              #expect(ours.kind == "invalid URL", "\(line): \(ours)")
            case ("prefer", _):
              // Never refused for a certificate, and encrypted whenever the server offers TLS,
              // where libpq may have fallen back to a plain connection.
              #expect(ours == (certificate == nil ? .plain : .tls), "\(line): \(ours)")
              #expect(libpq.kind != "refused", "\(line): \(libpq)")
            default:
              #expect(ours.kind == libpq.kind, "\(line): ours \(ours), libpq \(libpq)")
            }
            if case .refused(let reason) = ours {
              // The reason, not the TLS library's text.
              for raw in [".cc:", "<none>", "Generic description", "NIOSSL"] {
                #expect(!reason.contains(raw), "\(line): \(reason)")
              }
            }
          }
        }
      }
    }
    print(table.joined(separator: "\n"))
  }

  /// The error of a queue call on `url`, through the client's pool and the queue's probe, as a
  /// service sees it; and how long it took.
  static func callError(_ url: String) async throws -> (
    error: PostgresDelayedPreemptiveQueueError?, elapsed: Duration
  ) {
    try await TestDatabase.withClient(url: url) { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: "tls")
      queue.connectionTimeout = .seconds(10)
      let start = ContinuousClock.now
      let logger = queue.logger
      do {
        _ = try await queue.database("select") { connection in
          try await connection.scalar("SELECT 1", as: Int.self, logger: logger)
        }
        return (nil, start.duration(to: .now))
      } catch let error as PostgresDelayedPreemptiveQueueError {
        return (error, start.duration(to: .now))
      }
    }
  }

  /// The reason of a `databaseUnreachable` error, or a recorded issue.
  static func unreachableReason(_ url: String) async throws -> String {
    let (error, elapsed) = try await callError(url)
    guard case .databaseUnreachable(let host, _, let reason)? = error else {
      Issue.record("expected databaseUnreachable for \(url), got \(String(describing: error))")
      return ""
    }
    #expect(elapsed < .seconds(5), "the probe reports a refused handshake at once")
    #expect(host == URL(string: url)?.host)
    return reason
  }

  @Test func untrustedCertificateFailsTheCallSayingWhichCheckAndWhatToGive() async throws {
    let certificates = try await Certificates.make()
    try await TLSServer.serve(certificates.localhost)
    let other = TLSServer.url(
      host: "127.0.0.1", query: "sslmode=verify-ca&sslrootcert=\(certificates.otherAuthority)")
    let byOther = try await Self.unreachableReason(other)
    #expect(byOther.contains("not signed by a certificate authority of sslrootcert"), "\(byOther)")
    #expect(byOther.contains("give the certificate of the authority that signed it as sslrootcert"))
    let system = TLSServer.url(host: "127.0.0.1", query: "sslmode=verify-full")
    let bySystem = try await Self.unreachableReason(system)
    #expect(bySystem.contains("not signed by a certificate authority this system trusts"))
    #expect(bySystem.contains("sslrootcert=PATH"), "\(bySystem)")
    for reason in [byOther, bySystem] {
      #expect(!reason.contains(".cc:") && !reason.contains("Generic description"), "\(reason)")
    }
  }

  @Test func certificateForAnotherHostFailsTheCallNamingTheHostAndWhatToGive() async throws {
    let certificates = try await Certificates.make()
    try await TLSServer.serve(certificates.elsewhere)
    for host in ["127.0.0.1", "localhost"] {
      let url = TLSServer.url(
        host: host, query: "sslmode=verify-full&sslrootcert=\(certificates.authority)")
      let reason = try await Self.unreachableReason(url)
      #expect(reason.contains("not for the host \(host), which sslmode=verify-full checks"))
      #expect(reason.contains("a host name or address that the certificate holds"), "\(reason)")
      #expect(reason.contains("sslmode=verify-ca"), "\(reason)")
      #expect(!reason.contains("<none>"), "\(reason)")
    }
    // The same certificate passes verify-ca, which checks who signed it and not the name.
    let chainOnly = TLSServer.url(
      host: "127.0.0.1", query: "sslmode=verify-ca&sslrootcert=\(certificates.authority)")
    #expect(try await Self.callError(chainOnly).error == nil)
  }
}
