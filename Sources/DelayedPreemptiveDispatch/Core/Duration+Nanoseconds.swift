extension Duration {
  /// `Int64.max` nanoseconds (about 292 years): the longest span a time line of ``Tick``s holds.
  static let saturationCeiling = Duration.nanoseconds(Int64.max)
  /// `Int64.min` nanoseconds.
  static let saturationFloor = Duration.nanoseconds(Int64.min)

  /// The duration in whole nanoseconds, clamped to `Int64`, for every `Duration` value.
  ///
  /// `components` traps when the seconds do not fit in `Int64` (beyond about 9.2e18 s), so the
  /// bounds are compared first, on the duration itself; only values in range are split, and
  /// those cannot overflow: their seconds are below 9.3e9.
  var saturatingNanoseconds: Int64 {
    if self >= .saturationCeiling { return .max }
    if self <= .saturationFloor { return .min }
    let (seconds, attoseconds) = components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
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
