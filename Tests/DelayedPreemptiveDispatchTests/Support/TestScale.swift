#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Sizes of the randomized and stress tests. The normal run keeps the whole suite well under a
/// minute; `DPD_LONG_TESTS=1` switches to the long mode.
enum TestScale {
  static let isLong = ProcessInfo.processInfo.environment["DPD_LONG_TESTS"] == "1"

  /// Random operation sequences checked against the reference model.
  static let modelSequences = isLong ? 1_000_000 : 10_000
  /// `delay` calls per thread in a storm on the GCD queue.
  static let stormCallsPerThread = isLong ? 1_000_000 : 10_000
}
