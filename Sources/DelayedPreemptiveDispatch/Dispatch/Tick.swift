/// An instant of the queue's time line, in nanoseconds: `DispatchTime.uptimeNanoseconds` in
/// real time, or the offset from the clock's instant at `init` with a custom clock.
///
/// Arithmetic saturates at both ends instead of trapping, so a huge delay means "never, unless
/// flushed" rather than a crash.
struct Tick: InstantProtocol {
  var nanoseconds: UInt64

  func advanced(by duration: Duration) -> Tick {
    advanced(byNanoseconds: duration.saturatingNanoseconds)
  }

  func advanced(byNanoseconds delta: Int64) -> Tick {
    if delta >= 0 {
      let (sum, overflow) = nanoseconds.addingReportingOverflow(UInt64(delta))
      return Tick(nanoseconds: overflow ? .max : sum)
    }
    let magnitude = delta.magnitude
    return Tick(nanoseconds: nanoseconds > magnitude ? nanoseconds - magnitude : 0)
  }

  func duration(to other: Tick) -> Duration {
    other.nanoseconds >= nanoseconds
      ? .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds))
      : .nanoseconds(-Int64(clamping: nanoseconds - other.nanoseconds))
  }

  static func < (lhs: Tick, rhs: Tick) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

extension Duration {
  /// The duration in whole nanoseconds, clamped to `Int64`.
  var saturatingNanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return seconds < 0 ? .min : .max }
    let (total, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
    guard !carry else { return seconds < 0 ? .min : .max }
    return total
  }

  /// `seconds` as a duration; `parameter` names the argument in the precondition message.
  static func checkedSeconds(_ seconds: Double, parameter: String) -> Int64 {
    requireArgument(
      seconds.isFinite, "\(parameter) must be a finite number of seconds, got \(seconds)")
    let nanoseconds = seconds * 1e9
    if nanoseconds >= 9.2e18 { return .max }
    if nanoseconds <= -9.2e18 { return .min }
    return Int64(nanoseconds)
  }
}
