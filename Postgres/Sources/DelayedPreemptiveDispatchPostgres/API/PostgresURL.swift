import PostgresNIO

/// Turns a connection URL (`postgres://user[:password]@host[:port]/database[?parameters]`) into a
/// `PostgresClient.Configuration`, as `scripts/postgres.sh start` prints and as the worker reads
/// from `DPD_POSTGRES_URL`.
///
/// Two query parameters are understood, with libpq's meaning (the connection is made as
/// configured):
///
/// | `sslmode`     | TLS                                                                 |
/// |---------------|---------------------------------------------------------------------|
/// | (not given)   | none: this package's default, unlike libpq's `prefer`               |
/// | `disable`     | none; `sslrootcert` is ignored, as by libpq                         |
/// | `prefer`      | TLS if the server offers it, else plain; the certificate is not checked |
/// | `require`     | TLS or no connection; the chain is checked only with `sslrootcert`  |
/// | `verify-ca`   | TLS; the certificate chain is checked, the host name is not         |
/// | `verify-full` | TLS; the certificate chain and the host name are checked            |
///
/// `sslrootcert=PATH` names a PEM file of the certificate authorities to trust instead of the
/// system's. As in libpq, giving it makes `require` check the chain too. Where this package
/// differs from libpq, it is to be safer, and the tests hold it against libpq itself
/// (`PostgresTLSTests.everySSLModeConnectsAsLibpqDoes`):
///
/// - `prefer` never checks the certificate. libpq's `prefer` checks it against `sslrootcert`
///   and, when the check fails, connects again without TLS; here the connection stays
///   encrypted. Both connect in the same cases.
/// - `sslrootcert` without `sslmode` is an error: libpq would use `prefer`, this package's
///   default is no TLS, and either reading would surprise someone.
/// - An `sslrootcert` that `require`, `verify-ca` or `verify-full` cannot read is an error;
///   libpq's `require` would skip the check. libpq's default `~/.postgresql/root.crt` is not
///   read: without `sslrootcert`, the system's certificate authorities are trusted.
///
/// Any other parameter, or another `sslmode` value (libpq's `allow` included), is an error, so that
/// a setting that looks honoured is honoured.
///
/// ```swift
/// let configuration = try PostgresURL.configuration(
///   "postgres://app@db.internal:5432/app?sslmode=verify-full")
/// let client = PostgresClient(configuration: configuration)
/// ```
public enum PostgresURL {
  /// Thrown when a URL cannot be turned into a configuration: it is not of the form
  /// `postgres://user[:password]@host[:port]/database[?parameters]`, or it asks for something this
  /// package does not do (an unknown parameter or `sslmode`, an unreadable `sslrootcert`).
  ///
  /// Neither ``url`` nor ``description`` contains the password.
  public struct InvalidURL: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rejected URL, with its password replaced by `***`. When the credentials cannot be told
    /// apart from the host, everything between `://` and the last `@` is replaced.
    public var url: String
    /// Why the URL was rejected, for example `unknown sslmode "bogus"`.
    public var reason: String

    /// Records a rejection of `url` (redacted here, so that no caller can forget to).
    init(url: String, reason: String) {
      self.url = redactingPassword(url)
      self.reason = redactingPassword(in: reason, of: url)
    }

    /// `invalid PostgreSQL URL <url>: <reason>`, with the password replaced by `***`.
    public var description: String {
      "invalid PostgreSQL URL \(url): \(reason)"
    }
  }

  /// Parses `url` into a client configuration with the TLS mode its `sslmode` names.
  ///
  /// Throws ``InvalidURL`` when the URL does not parse, names an unknown parameter or `sslmode`,
  /// gives `sslrootcert` without `sslmode`, or names an `sslrootcert` file that holds no readable
  /// PEM certificate for a mode that checks certificates.
  public static func configuration(_ url: String) throws -> PostgresClient.Configuration {
    let parts: URLParts
    do {
      parts = try URLParts(url)
    } catch {
      throw InvalidURL(url: url, reason: error.reason)
    }
    let sslMode = parts.sslMode ?? .disable
    var trustRoots: NIOSSLTrustRoots?
    if let path = parts.sslRootCert, sslMode.usesRootCertificates {
      let certificates: [NIOSSLCertificate]
      do {
        certificates = try NIOSSLCertificate.fromPEMFile(path)
      } catch {
        throw InvalidURL(
          url: url, reason: "sslrootcert \"\(path)\" cannot be read as PEM certificates: \(error)")
      }
      guard !certificates.isEmpty else {
        throw InvalidURL(url: url, reason: "sslrootcert \"\(path)\" holds no PEM certificate")
      }
      trustRoots = .certificates(certificates)
    }
    return PostgresClient.Configuration(
      host: parts.host, port: parts.port, username: parts.user, password: parts.password,
      database: parts.database, tls: sslMode.tls(trustRoots: trustRoots))
  }
}
