import DelayedPreemptiveDispatchModel
import Dispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Sizes of the randomized and stress tests. The normal run keeps the whole suite well under a
/// minute; `DPD_LONG_TESTS=1` switches to the long mode.
enum TestScale {
  static let isLong = ProcessInfo.processInfo.environment["DPD_LONG_TESTS"] == "1"

  /// Whether the test process runs under ThreadSanitizer or AddressSanitizer: the runtime of
  /// either one exports its initializer, which `dlsym` finds.
  static let isSanitized: Bool = {
    #if canImport(Darwin)
      let everyImage = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
    #else
      let everyImage: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
    #endif
    return dlsym(everyImage, "__tsan_init") != nil || dlsym(everyImage, "__asan_init") != nil
  }()

  /// Random operation sequences checked against the reference model: 10⁴, 10⁶ in the long
  /// mode, and 10³ under a sanitizer. Those sequences run the pure state machine on one thread,
  /// where ThreadSanitizer has no race to find and every code path is taken within the first
  /// hundreds of sequences; at 10⁴ the two model suites kept both cores busy for 240 s of a CI
  /// run under ThreadSanitizer (30 s without it), and the suites whose threads do race waited.
  /// The run without a sanitizer, in the same CI run, checks all 10⁴.
  static let modelSequences = isLong ? 1_000_000 : isSanitized ? 1_000 : 10_000
  /// The PostgreSQL store's sequences that the keyed driver runs too (200 steps each): all
  /// `KeyedModelSequence.storeSequenceCount` (10³), and the first 10² under a sanitizer, for the
  /// reason above (the 10³ took 2 minutes of a core under ThreadSanitizer).
  static let storeSequences = isSanitized ? 100 : KeyedModelSequence.storeSequenceCount
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
