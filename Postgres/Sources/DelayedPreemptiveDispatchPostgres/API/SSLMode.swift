import PostgresNIO

/// The `sslmode` values of a connection URL that this package honours, with libpq's meaning.
///
/// One difference, where libpq's behaviour would be less safe: libpq's `prefer` checks the
/// certificate when it has certificate authorities (`sslrootcert`) and falls back to a plain,
/// unencrypted connection when the check fails; this package's `prefer` does not check the
/// certificate, so that it keeps the TLS connection there. It connects whenever libpq connects,
/// and is encrypted whenever libpq is. `PostgresTLSTests.everySSLModeConnectsAsLibpqDoes` holds
/// both against libpq itself.
enum SSLMode: String, CaseIterable, Sendable {
  /// No TLS; certificate settings are ignored.
  case disable
  /// TLS if the server offers it, else a plain connection; the certificate is not checked.
  case prefer
  /// TLS or no connection; like libpq, the certificate is checked only against `sslrootcert`'s
  /// authorities, when they are given (and then as by `verify-ca`).
  case require
  /// TLS, with the certificate chain checked but not the host name.
  case verifyCA = "verify-ca"
  /// TLS, with the certificate chain and the host name checked.
  case verifyFull = "verify-full"

  /// Whether this mode reads `sslrootcert`: the modes that check a certificate with it.
  var usesRootCertificates: Bool {
    switch self {
    case .disable, .prefer: false
    case .require, .verifyCA, .verifyFull: true
    }
  }

  /// The client's TLS setting for this mode.
  ///
  /// `trustRoots` replaces the system's certificate authorities; as in libpq, giving them makes
  /// `require` check the chain too. `disable` and `prefer` ignore them.
  func tls(trustRoots: NIOSSLTrustRoots?) -> PostgresClient.Configuration.TLS {
    var configuration = TLSConfiguration.makeClientConfiguration()
    if let trustRoots, usesRootCertificates { configuration.trustRoots = trustRoots }
    let chainOnly: CertificateVerification = .noHostnameVerification
    switch self {
    case .disable:
      return .disable
    case .prefer:
      configuration.certificateVerification = .none
      return .prefer(configuration)
    case .require:
      configuration.certificateVerification = trustRoots == nil ? .none : chainOnly
      return .require(configuration)
    case .verifyCA:
      configuration.certificateVerification = chainOnly
      return .require(configuration)
    case .verifyFull:
      configuration.certificateVerification = .fullVerification
      return .require(configuration)
    }
  }
}
