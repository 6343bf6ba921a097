/// Stops the program with `message` when a caller broke a documented precondition.
///
/// Unlike `precondition`, whose message is dropped from optimised builds, this prints the
/// message in every build configuration, so a release build still says which parameter was
/// wrong. Used for programmer errors only; everything else is documented behaviour.
///
/// It is SPI rather than `package`, so that the PostgreSQL package, a package of its own, checks
/// its arguments with this one function instead of a copy: `@_spi(Preconditions) import`. It is
/// no part of the library's API.
@_spi(Preconditions) public func requireArgument(
  _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
  line: UInt = #line
) {
  if !condition {
    fatalError("Precondition failed: \(message())", file: file, line: line)
  }
}
