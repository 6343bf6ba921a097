import Foundation
import PostgresNIO

/// Why a connection to the database failed, in the words of the server or the network: what
/// ``ConnectionProbe`` reports, for the queue's `databaseUnreachable` error, so that a refused
/// connection fails the call with its reason.
struct ConnectionFailure: Sendable, Hashable {
  /// A short sentence, for example `password authentication failed for user "app" (SQLSTATE
  /// 28P01)` or `connection refused`. Never contains the password.
  var reason: String
  /// The server's SQLSTATE, when the server gave the reason (`28P01`, `3D000`…).
  var sqlState: String?
}

extension ConnectionFailure {
  /// What `error`, thrown by an attempt to connect, says; nil when it says only that nothing
  /// answered in time or that the attempt was cancelled. Any occurrence of `password` in the
  /// reason is replaced by `***`. With the `configuration` of the attempt, a refused
  /// certificate is described by the check that failed and what to give (see ``TLSFailure``).
  init?(
    connecting error: any Error, password: String?,
    configuration: PostgresClient.Configuration? = nil
  ) {
    guard let failure = Self.describing(error, configuration: configuration) else { return nil }
    self.init(reason: redacting(password, in: failure.reason), sqlState: failure.sqlState)
  }

  private static func describing(
    _ error: any Error, configuration: PostgresClient.Configuration?
  ) -> ConnectionFailure? {
    if let tls = TLSFailure(error, configuration: configuration) {
      return ConnectionFailure(reason: tls.reason)
    }
    return describing(error)
  }

  private static func describing(_ error: any Error) -> ConnectionFailure? {
    switch error {
    case is CancellationError:
      return nil
    case let error as PSQLError:
      return describing(error)
    case let error as NIOConnectionError:
      if let lookup = error.dnsAError ?? error.dnsAAAAError {
        if lookup is SocketAddressError.UnknownHost { return describing(lookup) }
        return ConnectionFailure(reason: "unknown host \"\(error.host)\" (\(lookup))")
      }
      let reasons = error.connectionErrors.compactMap { describing($0.error)?.reason }
      guard !reasons.isEmpty else { return nil }
      return ConnectionFailure(reason: Array(Set(reasons)).sorted().joined(separator: "; "))
    case let error as SocketAddressError.UnknownHost:
      return ConnectionFailure(
        reason: "unknown host \"\(error.host)\" (\(error.errorDescription))")
    case let error as IOError:
      return describing(error)
    case let error as ChannelError:
      if case .connectTimeout = error { return nil }
      return ConnectionFailure(reason: "\(error)")
    case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
      return ConnectionFailure(reason: "TLS failed: \(error)")
    default:
      return ConnectionFailure(reason: String(describing: error))
    }
  }

  private static func describing(_ error: PSQLError) -> ConnectionFailure? {
    switch error.code {
    case .server:
      let message = error.serverInfo?[.message] ?? "the server refused the connection"
      let sqlState = error.serverInfo?[.sqlState]
      return ConnectionFailure(
        reason: sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message, sqlState: sqlState)
    case .sslUnsupported:
      return ConnectionFailure(reason: "the server does not accept TLS, which sslmode requires")
    case .failedToAddSSLHandler:
      return ConnectionFailure(
        reason: "TLS could not be set up: \(error.underlying.map { "\($0)" } ?? "no reason given")")
    case .authMechanismRequiresPassword:
      return ConnectionFailure(reason: "the server asks for a password and none is configured")
    case .unsupportedAuthMechanism:
      return ConnectionFailure(
        reason: "the server asks for an authentication method this client does not support")
    case .saslError:
      return ConnectionFailure(reason: "SCRAM authentication failed")
    case .connectionError, .serverClosedConnection, .clientClosedConnection:
      if let underlying = error.underlying { return describing(underlying) }
      if error.code == .connectionError { return ConnectionFailure(reason: "connection failed") }
      return ConnectionFailure(reason: "the connection closed during startup")
    default:
      return ConnectionFailure(reason: "connection failed (\(error.code))")
    }
  }

  private static func describing(_ error: IOError) -> ConnectionFailure? {
    switch error.errnoCode {
    case ECONNREFUSED: return ConnectionFailure(reason: "connection refused")
    case ETIMEDOUT: return nil
    case ENETUNREACH: return ConnectionFailure(reason: "network unreachable")
    case EHOSTUNREACH: return ConnectionFailure(reason: "host unreachable")
    case ECONNRESET: return ConnectionFailure(reason: "connection reset by the server")
    default: return ConnectionFailure(reason: "\(error)")
    }
  }
}
