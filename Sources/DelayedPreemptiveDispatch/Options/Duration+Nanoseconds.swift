extension Duration {
  /// `Int64.max` nanoseconds (about 292 years): the longest span a time line of ``TimelineInstant``s holds.
  @usableFromInline static let saturationCeiling = Duration.nanoseconds(Int64.max)
  /// `Int64.min` nanoseconds.
  @usableFromInline static let saturationFloor = Duration.nanoseconds(Int64.min)

  /// The duration in whole nanoseconds (truncated toward zero), clamped to `Int64`, for every
  /// `Duration` value.
  ///
  /// Where the standard library has `Duration.attoseconds` (Swift 6 on Linux, and Apple systems
  /// of 2024 on), one 128-bit division by a constant does it, several times cheaper than
  /// `components`. Elsewhere `components` is used, after comparing against the bounds on the
  /// duration itself: it traps when the seconds do not fit in `Int64` (beyond about 9.2e18 s),
  /// and values in range cannot overflow, since their seconds are below 9.3e9.
  @inlinable
  var saturatingNanoseconds: Int64 {
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
      return Int64(clamping: attoseconds / 1_000_000_000)
    }
    return saturatingNanosecondsFromComponents
  }

  /// ``saturatingNanoseconds`` through `components`, for systems without `attoseconds`.
  @usableFromInline
  var saturatingNanosecondsFromComponents: Int64 {
    if self >= .saturationCeiling { return .max }
    if self <= .saturationFloor { return .min }
    let (seconds, attoseconds) = components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }

  /// `seconds` as a duration; `parameter` names the argument in the precondition message.
  @usableFromInline
  static func checkedSeconds(_ seconds: Double, parameter: String) -> Int64 {
    requireArgument(
      seconds.isFinite, "\(parameter) must be a finite number of seconds, got \(seconds)")
    let nanoseconds = seconds * 1e9
    if nanoseconds >= 9.2e18 { return .max }
    if nanoseconds <= -9.2e18 { return .min }
    return Int64(nanoseconds)
  }
}
