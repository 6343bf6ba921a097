#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

extension PasscodeLockout {
  /// A reading of the time the user cannot set: which boot session the device is in, and how
  /// long it has been up in that session, sleep included.
  ///
  /// A ``Snapshot`` records one so that ``restore(_:now:)`` can measure the time that passed with
  /// it instead of the wall clock. ``current`` reads it from the system; tests pass their own to
  /// ``snapshot(now:reference:)`` and ``restore(_:now:reference:)``.
  public struct MonotonicReference: Codable, Sendable, Hashable {
    /// Names the boot session: it changes at every boot and only then.
    public var bootSessionID: String
    /// The time since boot, counting time asleep.
    public var uptime: Duration

    /// Creates a reading from its parts.
    public init(bootSessionID: String, uptime: Duration) {
      self.bootSessionID = bootSessionID
      self.uptime = uptime
    }

    /// The system's reading, or `nil` if the platform does not tell the boot session.
    ///
    /// On Linux: `/proc/sys/kernel/random/boot_id` and `CLOCK_BOOTTIME`. On Apple platforms:
    /// the `kern.bootsessionuuid` sysctl and `mach_continuous_time()`.
    public static var current: MonotonicReference? {
      guard let id = bootSessionIDOfSystem(), let uptime = uptimeOfSystem() else { return nil }
      return MonotonicReference(bootSessionID: id, uptime: uptime)
    }
  }
}

#if canImport(Darwin)
  private func bootSessionIDOfSystem() -> String? {
    var size = 0
    guard sysctlbyname("kern.bootsessionuuid", nil, &size, nil, 0) == 0, size > 0 else {
      return nil
    }
    var buffer = [CChar](repeating: 0, count: size)
    guard sysctlbyname("kern.bootsessionuuid", &buffer, &size, nil, 0) == 0 else { return nil }
    let id = String(
      decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return id.isEmpty ? nil : id
  }

  private func uptimeOfSystem() -> Duration? {
    var timebase = mach_timebase_info_data_t()
    guard mach_timebase_info(&timebase) == KERN_SUCCESS, timebase.denom != 0 else { return nil }
    let ticks = mach_continuous_time()
    let (high, low) = ticks.multipliedFullWidth(by: UInt64(timebase.numer))
    let nanoseconds = UInt64(timebase.denom).dividingFullWidth((high: high, low: low)).quotient
    return .nanoseconds(Int64(clamping: nanoseconds))
  }
#elseif canImport(Glibc) || canImport(Musl)
  private func bootSessionIDOfSystem() -> String? {
    let file = open("/proc/sys/kernel/random/boot_id", O_RDONLY)
    guard file >= 0 else { return nil }
    defer { close(file) }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    let id = String(decoding: buffer[0..<count], as: UTF8.self)
      .filter { !$0.isWhitespace }
    return id.isEmpty ? nil : id
  }

  private func uptimeOfSystem() -> Duration? {
    var time = timespec()
    guard clock_gettime(CLOCK_BOOTTIME, &time) == 0 else { return nil }
    return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
  }
#else
  private func bootSessionIDOfSystem() -> String? { nil }
  private func uptimeOfSystem() -> Duration? { nil }
#endif
