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
