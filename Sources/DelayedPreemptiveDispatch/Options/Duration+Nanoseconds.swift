extension Duration {
  /// `Int64.max` nanoseconds (about 292 years): the longest span a time line of ``TimelineInstant``s holds.
  @usableFromInline static let saturationCeiling = Duration.nanoseconds(Int64.max)
  /// `Int64.min` nanoseconds.
  @usableFromInline static let saturationFloor = Duration.nanoseconds(Int64.min)

  /// The duration in whole nanoseconds (truncated toward zero), clamped to `Int64`, for every
  /// `Duration` value.
  ///
  /// Computed from the two 64-bit words of the duration's attoseconds with 64-bit arithmetic
  /// only: `Int64(clamping: attoseconds / 1_000_000_000)` calls a 128-bit division routine
  /// (`__divti3`), which cost a quarter of a clock reading (the stream reads the clock once per
  /// element), and `components`, on systems without `attoseconds`, costs more still. A
  /// magnitude of `high * 2^64 + low` attoseconds, with `high` below 10^9 (any larger one
  /// saturates), is `high * 18_446_744_073 + low / 10^9 + (high * 709_551_616 + low % 10^9) /
  /// 10^9` nanoseconds, since 2^64 = 18_446_744_073 * 10^9 + 709_551_616; no term and no partial
  /// sum exceeds the result, which is below 2^64. Dividing by the constant 10^9 compiles to a
  /// multiplication.
  @inlinable
  var saturatingNanoseconds: Int64 {
    let negative = _high < 0
    var high = UInt64(bitPattern: _high)
    var low = _low
    if negative {
      // The magnitude of a two's-complement 128-bit value.
      low = ~low &+ 1
      high = ~high &+ (low == 0 ? 1 : 0)
    }
    guard high < 1_000_000_000 else { return negative ? .min : .max }
    let magnitude =
      high &* 18_446_744_073 &+ low / 1_000_000_000
      &+ (high &* 709_551_616 &+ low % 1_000_000_000) / 1_000_000_000
    guard magnitude <= UInt64(Int64.max) else { return negative ? .min : .max }
    return negative ? -Int64(magnitude) : Int64(magnitude)
  }

  /// ``saturatingNanoseconds`` through `components`: the reference that tests compare it with,
  /// on every system.
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
