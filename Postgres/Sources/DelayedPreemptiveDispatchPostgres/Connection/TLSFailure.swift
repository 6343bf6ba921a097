import PostgresNIO

/// A refused TLS handshake in words an operator acts on: which check failed, and what to give,
/// instead of the TLS library's text (`CERTIFICATE_VERIFY_FAILED at …/handshake.cc:320`,
/// `Couldn't find <none> in certificate`).
///
/// <!-- snippet: skip (an internal type: DocC does not render its doc comment) -->
/// ```swift
/// if let failure = TLSFailure(error, configuration: configuration) {
///   print(failure.reason)  // the server's certificate is not for the host 127.0.0.1, …
/// }
/// ```
///
/// `PostgresTLSTests` holds each reason against a real server with certificates made by
/// openssl.
struct TLSFailure {
  /// What failed and what to give, in one sentence.
  var reason: String

  /// The failure that `error` reports, or nil when `error` is not a TLS error. `configuration`
  /// (the attempt's) names the host and says whether `sslrootcert` gave the authorities.
  init?(_ error: any Error, configuration: PostgresClient.Configuration?) {
    guard let found = Self.tlsError(in: error) else { return nil }
    let host = configuration?.options.tlsServerName ?? configuration?.host ?? "the host"
    var rootCertificates = false
    if case .require(let tls)? = configuration?.tls.mode, case .certificates? = tls.trustRoots {
      rootCertificates = true
    }
    if let extra = found as? NIOSSLExtraError, extra == .failedToValidateHostname {
      reason =
        "TLS: the server's certificate is not for the host \(host), which sslmode=verify-full "
        + "checks: connect by a host name or address that the certificate holds, or use "
        + "sslmode=verify-ca to check only who signed it"
      return
    }
    let codes = Self.reasonCodes(of: found)
    if codes.contains("CERTIFICATE_VERIFY_FAILED") {
      let authorities =
        rootCertificates
        ? "by a certificate authority of sslrootcert"
        : "by a certificate authority this system trusts"
      let give =
        rootCertificates
        ? "give the certificate of the authority that signed it as sslrootcert=PATH"
        : "give the certificate of the authority that signed it as sslrootcert=PATH (libpq's "
          + "~/.postgresql/root.crt is not read)"
      reason =
        "TLS: the server's certificate was not accepted: it is not signed \(authorities), or it "
        + "has expired (CERTIFICATE_VERIFY_FAILED); \(give), or use sslmode=require without "
        + "sslrootcert to encrypt without checking it"
      return
    }
    let named = codes.isEmpty ? "\(found)" : codes.joined(separator: ", ")
    reason = "TLS: the handshake with the server failed (\(named))"
  }

  /// The TLS library's own error, found in `error` or in what it wraps.
  static func tlsError(in error: any Error) -> (any Error)? {
    switch error {
    case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError: return error
    case let error as PSQLError: return error.underlying.flatMap(tlsError(in:))
    case let error as NIOConnectionError:
      return error.connectionErrors.lazy.compactMap { tlsError(in: $0.error) }.first
    default: return nil
    }
  }

  /// BoringSSL's reason names in `error` (`CERTIFICATE_VERIFY_FAILED`, `WRONG_VERSION_NUMBER`),
  /// without the source file and line that its description carries.
  static func reasonCodes(of error: any Error) -> [String] {
    String(describing: error).matches(of: /OPENSSL_internal:([A-Z0-9_]+)/).map { String($0.1) }
  }
}
