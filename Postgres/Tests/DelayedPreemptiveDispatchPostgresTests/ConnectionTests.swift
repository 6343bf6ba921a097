import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P12, without a server: the URL's `sslmode` gives the TLS it names, an unknown setting is
/// an error, and no error shows a password.
@Suite struct ConnectionSettingsTests {
  /// What a client's TLS setting amounts to, for comparisons.
  enum TLS: Equatable {
    case disable
    case prefer(CertificateVerification)
    case require(CertificateVerification)

    init?(_ tls: PostgresClient.Configuration.TLS) {
      switch tls.mode {
      case .disable: self = .disable
      case .prefer(let configuration): self = .prefer(configuration.certificateVerification)
      case .require(let configuration): self = .require(configuration.certificateVerification)
      case nil: return nil
      }
    }
  }

  static let base = "postgres://app@db.internal:6543/app"
  static let password = "s3cr3t-Pa55"

  @Test func tlsModeOfEveryClientSettingIsReadable() {
    var chain = TLSConfiguration.makeClientConfiguration()
    chain.certificateVerification = .noHostnameVerification
    var none = TLSConfiguration.makeClientConfiguration()
    none.certificateVerification = .none
    #expect(TLS(.disable) == .disable)
    #expect(TLS(.prefer(chain)) == .prefer(.noHostnameVerification))
    #expect(TLS(.require(none)) == .require(.none))
    #expect(TLS(.require(.makeClientConfiguration())) == .require(.fullVerification))
  }

  @Test(arguments: [
    ("", TLS.disable),
    ("?sslmode=disable", .disable),
    ("?sslmode=prefer", .prefer(.none)),
    ("?sslmode=require", .require(.none)),
    ("?sslmode=verify-ca", .require(.noHostnameVerification)),
    ("?sslmode=verify-full", .require(.fullVerification)),
  ])
  func sslModeGivesTheTLSItNames(query: String, expected: TLS) throws {
    let configuration = try PostgresURL.configuration(Self.base + query)
    #expect(TLS(configuration.tls) == expected)
    // Independent of `TLS.mode`: postgres-nio's own rendering names the case.
    let rendering = String(reflecting: configuration.tls)
    switch expected {
    case .disable: #expect(rendering.contains(".disable"))
    case .prefer: #expect(rendering.contains(".prefer("))
    case .require: #expect(rendering.contains(".require("))
    }
  }

  @Test func urlPartsAreKept() throws {
    let configuration = try PostgresURL.configuration(
      "postgresql://app:p%40ss@db.internal:6543/orders?sslmode=require")
    #expect(configuration.username == "app")
    #expect(configuration.password == "p@ss")
    #expect(configuration.host == "db.internal")
    #expect(configuration.port == 6543)
    #expect(configuration.database == "orders")
  }

  @Test(arguments: ["verify-ca", "verify-full", "require"])
  func sslRootCertReplacesTheTrustedAuthoritiesAndChecksTheChain(mode: String) throws {
    let path = try Self.writeCertificateAuthority()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let configuration = try PostgresURL.configuration(
      Self.base + "?sslmode=\(mode)&sslrootcert=\(path)")
    guard case .require(let tls) = configuration.tls.mode else {
      Issue.record("sslmode=\(mode) with sslrootcert gives an unexpected TLS mode")
      return
    }
    #expect(tls.trustRoots == .certificates(try NIOSSLCertificate.fromPEMFile(path)))
    let verification: CertificateVerification =
      mode == "verify-full" ? .fullVerification : .noHostnameVerification
    #expect(tls.certificateVerification == verification)
  }

  /// libpq ignores `sslrootcert` with `disable`; its `prefer` would check the certificate and
  /// fall back to a plain connection when the check fails, where this one keeps TLS unchecked.
  /// Neither reads the file, so an unreadable one is no error.
  @Test func disableAndPreferIgnoreSSLRootCert() throws {
    let missing = "/nonexistent/dpd-\(UUID().uuidString).pem"
    let disabled = try PostgresURL.configuration(
      Self.base + "?sslmode=disable&sslrootcert=\(missing)")
    #expect(TLS(disabled.tls) == .disable)
    let preferred = try PostgresURL.configuration(
      Self.base + "?sslmode=prefer&sslrootcert=\(missing)")
    guard case .prefer(let tls) = preferred.tls.mode else {
      Issue.record("sslmode=prefer gives an unexpected TLS mode")
      return
    }
    #expect(tls.certificateVerification == .none)
    #expect(tls.trustRoots == .default)
  }

  @Test func unreadableSSLRootCertIsAnError() throws {
    let path = "/nonexistent/dpd-\(UUID().uuidString).pem"
    let error = try #require(throws: PostgresURL.InvalidURL.self) {
      try PostgresURL.configuration(Self.base + "?sslmode=verify-ca&sslrootcert=\(path)")
    }
    #expect(error.reason.contains("sslrootcert"))
    #expect(error.reason.contains(path))
  }

  @Test(arguments: ["bogus", "allow", "REQUIRE", ""])
  func unknownSSLModeIsAnErrorNamingTheValue(value: String) throws {
    let error = try #require(throws: PostgresURL.InvalidURL.self) {
      try PostgresURL.configuration(Self.base + "?sslmode=\(value)")
    }
    #expect(error.reason.contains("sslmode \"\(value)\""))
    #expect(error.description.contains("sslmode \"\(value)\""))
  }

  @Test(arguments: [
    ("?application_name=x", "unknown parameter \"application_name\""),
    ("?sslmode=require&sslmode=disable", "\"sslmode\" is given twice"),
    ("?sslmode", "\"sslmode\" has no value"),
    ("?sslmode=%zz", "malformed %-escape"),
    ("?sslrootcert=/etc/ca.pem", "sslrootcert is given without sslmode"),
  ])
  func unsupportedParameterIsAnError(query: String, reason: String) throws {
    let error = try #require(throws: PostgresURL.InvalidURL.self) {
      try PostgresURL.configuration(Self.base + query)
    }
    #expect(error.reason.contains(reason))
  }

  @Test(arguments: [
    "postgres://app:\(password)@db:5432/app?sslmode=bogus",
    "postgres://app:\(password)@db:99999/app",
    "postgres://app:\(password)@/app",
    "postgres://app:\(password)@db/app?application_name=x",
    "postgres://app:\(password)%zz@db/app",
    "postgres://:\(password)@db/app",
    "postgres://a/p:\(password)@db/app?sslmode=bogus",
    "postgres://app:p@ss-\(password)@db/app?sslmode=bogus",
    "postgres://app:\(password)db/app",
    "mysql://app:\(password)@db/app",
    "postgres://app@db/app?password=\(password)",
    "postgres://app:\(password)@db/app?sslmode=verify-ca&sslrootcert=/nonexistent/\(password)",
  ])
  func invalidURLNeverShowsThePassword(url: String) throws {
    let error = try #require(throws: PostgresURL.InvalidURL.self) {
      try PostgresURL.configuration(url)
    }
    for text in [error.url, error.reason, error.description, String(reflecting: error)] {
      #expect(!text.contains(Self.password), "\(text)")
    }
    #expect(!error.reason.isEmpty)
  }

  @Test(arguments: [
    ("postgres://app:pw@db:5432/app", "postgres://app:***@db:5432/app"),
    ("postgres://app@db/app", "postgres://app@db/app"),
    ("postgres://db:5432/app", "postgres://db:5432/app"),
    ("postgres://app:p@ss@db/app", "postgres://app:***@db/app"),
    ("postgres://app:p/w?x@db/app", "postgres://app:***@db/app"),
    ("postgres://a/b:pw@db/app", "postgres://***@db/app"),
    ("postgres://app:pw/db/app", "postgres://***/db/app"),
    (
      "postgres://db/app?sslmode=require&password=pw",
      "postgres://db/app?sslmode=require&password=***"
    ),
  ])
  func redactingPasswordReplacesOnlyThePassword(url: String, redacted: String) {
    #expect(redactingPassword(url) == redacted)
  }

  /// Writes a PEM certificate authority (a self-signed test certificate) to a temporary file.
  static func writeCertificateAuthority() throws -> String {
    let path = NSTemporaryDirectory() + "dpd-ca-\(UUID().uuidString).pem"
    try certificateAuthority.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  static let certificateAuthority = """
    -----BEGIN CERTIFICATE-----
    MIIBhDCCASmgAwIBAgIURNTVIhr+z7xU+kNwGnjHvHptRoswCgYIKoZIzj0EAwIw
    FjEUMBIGA1UEAwwLZHBkLXRlc3QtY2EwIBcNMjYxMTIzMjIzODE3WhgPMjEyNjEw
    MzAyMjM4MTdaMBYxFDASBgNVBAMMC2RwZC10ZXN0LWNhMFkwEwYHKoZIzj0CAQYI
    KoZIzj0DAQcDQgAEhfQdYPrRe1jjRVfLvnvvwDyx0QMv5Cbyx0ZKOu9NNkXohn3A
    HjzSiewzO/rejNQCN/5ZPxOcQhv6sPM1ueWFS6NTMFEwHQYDVR0OBBYEFGFOYOe7
    o5dqwHFj9v8v+JNuvDCGMB8GA1UdIwQYMBaAFGFOYOe7o5dqwHFj9v8v+JNuvDCG
    MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAL6wMNMcNwAeiqLz
    Knc7/p4rZ5JdmAjsRgXTLBUDF/G1AiEAr5yTeo1K2pYs/NzBD0eA891FA+aI5dIu
    qxPGQwvb40s=
    -----END CERTIFICATE-----

    """
}

/// Rule P12, without a server: a probe reports a refused port and an unknown host at once, gives
/// nil on silence within its limit, shares one attempt, and never quotes the password.
@Suite struct ConnectionProbeTests {
  static let password = "s3cr3t-Pa55"

  @Test func failureReasonsNameTheNetworksReasonAndNeverThePassword() {
    let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
    #expect(ConnectionFailure(connecting: refused, password: nil)?.reason == "connection refused")
    #expect(
      ConnectionFailure(connecting: ChannelError.connectTimeout(.seconds(1)), password: nil) == nil)
    #expect(ConnectionFailure(connecting: CancellationError(), password: nil) == nil)
    struct Leaky: Error, CustomStringConvertible {
      var description: String { "rejected s3cr3t-Pa55 for app" }
    }
    let failure = ConnectionFailure(connecting: Leaky(), password: Self.password)
    #expect(failure?.reason == "rejected *** for app")
  }

  @Test func refusedPortFailsWithRefusedAtOnce() async throws {
    let probe = ConnectionProbe(configuration: Self.configuration(host: "127.0.0.1", port: 1))
    let start = ContinuousClock.now
    let failure = await probe.failure(within: .seconds(10))
    #expect(start.duration(to: .now) < .seconds(2))
    #expect(failure?.reason.contains("refused") == true, "\(String(describing: failure))")
    #expect(failure?.sqlState == nil)
  }

  @Test func unknownHostFailsWithUnknownHost() async throws {
    let probe = ConnectionProbe(
      configuration: Self.configuration(host: "dpd-no-such-host.invalid", port: 5432))
    let failure = await probe.failure(within: .seconds(10))
    #expect(failure?.reason.contains("unknown host") == true, "\(String(describing: failure))")
    #expect(failure?.reason.contains("dpd-no-such-host.invalid") == true)
  }

  @Test func silentServerGivesNilWithinTheLimit() async throws {
    try await Self.withSilentServer { port in
      let probe = ConnectionProbe(configuration: Self.configuration(host: "127.0.0.1", port: port))
      let start = ContinuousClock.now
      #expect(await probe.failure(within: .milliseconds(300)) == nil)
      let elapsed = start.duration(to: .now)
      #expect(elapsed >= .milliseconds(300))
      #expect(elapsed < .seconds(2), "the connect timeout is 10 s; the limit must win")
    }
  }

  @Test func cancelledCallerStopsWaiting() async throws {
    try await Self.withSilentServer { port in
      let probe = ConnectionProbe(configuration: Self.configuration(host: "127.0.0.1", port: port))
      let start = ContinuousClock.now
      let caller = Task { await probe.failure(within: .seconds(30)) }
      try await Task.sleep(for: .milliseconds(100))
      caller.cancel()
      #expect(await caller.value == nil)
      #expect(start.duration(to: .now) < .seconds(5))
    }
  }

  @Test func concurrentCallersShareOneAttempt() async throws {
    try await Self.withSilentServer { port in
      let probe = ConnectionProbe(configuration: Self.configuration(host: "127.0.0.1", port: port))
      await withTaskGroup(of: ConnectionFailure?.self) { group in
        for _ in 0..<8 { group.addTask { await probe.failure(within: .seconds(2)) } }
        for await failure in group { #expect(failure == nil) }
      }
      #expect(await probe.attemptCount == 1)
    }
  }

  @Test func resultIsReusedWhileFreshOnly() async throws {
    let refused = Self.configuration(host: "127.0.0.1", port: 1)
    let reusing = ConnectionProbe(configuration: refused, reuse: .seconds(60))
    let first = await reusing.failure(within: .seconds(10))
    #expect(first != nil)
    #expect(await reusing.failure(within: .seconds(10)) == first)
    #expect(await reusing.attemptCount == 1)
    let renewing = ConnectionProbe(configuration: refused, reuse: .zero)
    _ = await renewing.failure(within: .seconds(10))
    _ = await renewing.failure(within: .seconds(10))
    #expect(await renewing.attemptCount == 2)
  }

  static func configuration(host: String, port: Int) -> PostgresClient.Configuration {
    PostgresClient.Configuration(
      host: host, port: port, username: "app", password: password, database: "app",
      tls: .disable)
  }

  /// Runs `body` with the port of a TCP server on 127.0.0.1 that accepts and never answers.
  static func withSilentServer(_ body: (Int) async throws -> Void) async throws {
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .bind(host: "127.0.0.1", port: 0).get()
    defer { server.close(promise: nil) }
    try await body(try #require(server.localAddress?.port))
  }

}

/// Rule P12 against the real server: a wrong password, an unknown database and a TLS demand the
/// server cannot meet fail with the server's reason at once; a good configuration gives nil.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct ConnectionProbeServerTests {
  /// The role `scripts/postgres.sh start` makes authenticate with this password.
  static let passwordUser = "dpd_password_user"
  static let rightPassword = "dpd_password_secret"

  static func failure(
    _ change: (inout PostgresClient.Configuration) -> Void
  ) async throws -> (failure: ConnectionFailure?, elapsed: Duration) {
    var configuration = try TestDatabase.configuration()
    change(&configuration)
    let probe = ConnectionProbe(configuration: configuration)
    let start = ContinuousClock.now
    let failure = await probe.failure(within: .seconds(10))
    return (failure, start.duration(to: .now))
  }

  @Test func wrongPasswordFailsWithItsSQLStateAtOnce() async throws {
    let wrong = "wrong-s3cr3t-Pa55"
    let (failure, elapsed) = try await Self.failure {
      $0.username = Self.passwordUser
      $0.password = wrong
    }
    #expect(elapsed < .seconds(2))
    #expect(failure?.sqlState == "28P01")
    #expect(
      failure?.reason
        == "password authentication failed for user \"\(Self.passwordUser)\" (SQLSTATE 28P01)")
    #expect(failure?.reason.contains(wrong) == false)
  }

  @Test func rightPasswordConnects() async throws {
    let (failure, _) = try await Self.failure {
      $0.username = Self.passwordUser
      $0.password = Self.rightPassword
    }
    #expect(failure == nil)
  }

  @Test func unknownDatabaseFailsWithItsSQLStateAtOnce() async throws {
    let (failure, elapsed) = try await Self.failure { $0.database = "dpd_no_such_database" }
    #expect(elapsed < .seconds(2))
    #expect(failure?.sqlState == "3D000")
    #expect(
      failure?.reason == "database \"dpd_no_such_database\" does not exist (SQLSTATE 3D000)")
  }

  @Test func goodConfigurationGivesNil() async throws {
    let (failure, _) = try await Self.failure { _ in }
    #expect(failure == nil)
  }

  /// The test server has no TLS: `require` cannot be met, `prefer` falls back to plain.
  @Test func requireOnAServerWithoutTLSSaysSoAndPreferFallsBack() async throws {
    let require = try PostgresURL.configuration(TestDatabase.url + "?sslmode=require")
    let (refused, elapsed) = try await Self.failure { $0.tls = require.tls }
    #expect(elapsed < .seconds(2))
    #expect(refused?.reason.contains("TLS") == true, "\(String(describing: refused))")
    let prefer = try PostgresURL.configuration(TestDatabase.url + "?sslmode=prefer")
    let (fellBack, _) = try await Self.failure { $0.tls = prefer.tls }
    #expect(fellBack == nil)
  }
}
