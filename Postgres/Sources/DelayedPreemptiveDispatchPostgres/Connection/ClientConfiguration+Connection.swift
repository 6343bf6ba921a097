import PostgresNIO

/// The TLS mode of a `PostgresClient.Configuration`, which postgres-nio keeps internal.
enum ClientTLSMode {
  case disable
  case prefer(TLSConfiguration)
  case require(TLSConfiguration)
}

extension PostgresClient.Configuration.TLS {
  /// The mode this setting stands for, or nil when it cannot be read.
  ///
  /// postgres-nio offers no accessor, so this reads the setting by reflection: a stored `base`
  /// enum with the cases `disable`, `prefer(TLSConfiguration)` and `require(TLSConfiguration)`,
  /// as in postgres-nio 1.33. `ConnectionSettingsTests.tlsModeOfEveryClientSettingIsReadable`
  /// fails if a later version changes that.
  var mode: ClientTLSMode? {
    guard let base = Mirror(reflecting: self).children.first(where: { $0.label == "base" })?.value
    else { return nil }
    let cases = Mirror(reflecting: base)
    guard cases.displayStyle == .enum else { return nil }
    guard let payload = cases.children.first else {
      return String(describing: base) == "disable" ? .disable : nil
    }
    guard let configuration = payload.value as? TLSConfiguration else { return nil }
    switch payload.label {
    case "prefer": return .prefer(configuration)
    case "require": return .require(configuration)
    default: return nil
    }
  }
}

extension PostgresClient.Configuration {
  /// The settings of one direct connection made as the client's pool makes it: the same endpoint,
  /// credentials, TLS mode and options.
  ///
  /// Returns nil when the TLS mode cannot be read (see `TLS.mode`); throws NIOSSL's error when the
  /// TLS configuration cannot make a context, for example with an unreadable certificate file.
  func connectionConfiguration() throws -> PostgresConnection.Configuration? {
    var connection: PostgresConnection.Configuration
    if let unixSocketPath {
      connection = PostgresConnection.Configuration(
        unixSocketPath: unixSocketPath, username: username, password: password,
        database: database)
    } else if let host, let port, let mode = tls.mode {
      let connectionTLS: PostgresConnection.Configuration.TLS
      switch mode {
      case .disable: connectionTLS = .disable
      case .prefer(let tls): connectionTLS = .prefer(try NIOSSLContext(configuration: tls))
      case .require(let tls): connectionTLS = .require(try NIOSSLContext(configuration: tls))
      }
      connection = PostgresConnection.Configuration(
        host: host, port: port, username: username, password: password, database: database,
        tls: connectionTLS)
    } else {
      return nil
    }
    connection.options.connectTimeout = TimeAmount(options.connectTimeout)
    connection.options.tlsServerName = options.tlsServerName
    connection.options.requireBackendKeyData = options.requireBackendKeyData
    connection.options.additionalStartupParameters = options.additionalStartupParameters
    return connection
  }
}
