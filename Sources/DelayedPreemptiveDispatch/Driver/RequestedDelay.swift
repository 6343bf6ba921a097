/// How far ahead a submission asks to run.
@usableFromInline
enum RequestedDelay: Sendable {
  case nanoseconds(Int64)
  /// Converted by the driver, through the cache of the last duration.
  case duration(Duration)
}
