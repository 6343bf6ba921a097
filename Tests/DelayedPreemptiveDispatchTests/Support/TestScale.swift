import Dispatch

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
  /// Threads in a storm on the GCD queue, and `delay` calls per thread.
  static let stormThreads = isLong ? 8 : 4
  static let stormCallsPerThread = isLong ? 1_000_000 : 10_000
  /// Tasks in a storm on the actor, and `delay` calls per task.
  static let actorStormTasks = isLong ? 8 : 4
  static let actorCallsPerTask = isLong ? 100_000 : 1_000
  /// Repetitions of the ManualClock scenarios that must give identical traces.
  static let determinismRepetitions = isLong ? 1_000 : 20
  /// Random interleavings of a debounced stream's base, clock and cancellation.
  static let streamRaceTrials = isLong ? 100_000 : 10_000
}

/// Runs CPU-bound test work on a dispatch thread, so that it does not hold one of Swift
/// concurrency's few cooperative threads (one per core) for seconds while other suites' tasks
/// and timers wait for a thread; the real-time tests would then measure the starvation.
func offCooperativePool<Result: Sendable>(
  _ body: @escaping @Sendable () -> Result
) async -> Result {
  await withCheckedContinuation { continuation in
    // A serial queue with no target gets a thread of its own, outside the global pool too.
    DispatchQueue(label: "offCooperativePool").async { continuation.resume(returning: body()) }
  }
}
