import PostgresNIO

/// The `sslmode` values of a connection URL that this package honours, with libpq's meaning.
enum SSLMode: String, CaseIterable, Sendable {
  /// No TLS.
  case disable
  /// TLS if the server offers it, else a plain connection.
  case prefer
  /// TLS or no connection; like libpq, the certificate is not checked.
  case require
  /// TLS, with the certificate chain checked but not the host name.
  case verifyCA = "verify-ca"
  /// TLS, with the certificate chain and the host name checked.
  case verifyFull = "verify-full"

  /// The client's TLS setting for this mode.
  ///
  /// `trustRoots` replaces the system's certificate authorities; as in libpq, giving them makes
  /// `prefer` and `require` check the chain too.
  func tls(trustRoots: NIOSSLTrustRoots?) -> PostgresClient.Configuration.TLS {
    var configuration = TLSConfiguration.makeClientConfiguration()
    if let trustRoots { configuration.trustRoots = trustRoots }
    let chainOnly: CertificateVerification = .noHostnameVerification
    switch self {
    case .disable:
      return .disable
    case .prefer:
      configuration.certificateVerification = trustRoots == nil ? .none : chainOnly
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
