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
