import Dispatch
import Testing

/// The one rule of every test that waits on real time (`asyncAfter`, `ContinuousClock`): those
/// tagged `.realTime`, and the real-time storms.
///
/// - **Not before, strictly.** A task, callback or signal never comes before its deadline: the
///   test reads the clock and checks it exactly, since no load can make a timer early.
/// - **After, only eventually.** What is due must come, but the test does not bound how late:
///   it waits up to `RealTime.eventually` (2 minutes), a bound that only turns a lost task
///   into a failure instead of a hang, and the suite's `RealTime.timeLimit` catches an await
///   that has no bound of its own. `swift test` runs the suites in parallel, and on a loaded
///   2-core machine the CPU-heavy ones (storms, model tests) can delay a 50 ms timer by more
///   than 10 s; that is the machine, not the library. How late timers fire is measured by the
///   benchmarks (fire latency, BENCHMARKS.md), not asserted by tests.
/// - **Never wait on a cooperative thread.** A blocking wait (`wait(timeout:)`) or a burst of
///   threads (`concurrentPerform`) runs through `offCooperativePool`: Swift concurrency
///   has one cooperative thread per core, and the actors' timers and other tests' tasks need
///   them while a test waits.
enum RealTime {
  /// How long a real-time test waits for something due before it calls it lost.
  static let eventually = Duration.seconds(120)

  /// The test time limit of a real-time suite: longer than `eventually`, so that a bounded
  /// wait reports first.
  static let timeLimit = TimeLimitTrait.Duration.minutes(3)

  /// `eventually` from now, as a Dispatch deadline.
  static func deadline() -> DispatchTime {
    .now() + .seconds(Int(eventually.components.seconds))
  }

  /// Calls `wait` (a queue's `wait(timeout:)`) with `deadline()` on a thread of its own, not
  /// on a cooperative thread.
  static func waitUntilIdle(
    _ wait: @escaping @Sendable (DispatchTime) -> DispatchTimeoutResult
  ) async -> DispatchTimeoutResult {
    await offCooperativePool { wait(deadline()) }
  }
}

extension Trait where Self == TimeLimitTrait {
  /// `RealTime.timeLimit`, for the suites that wait on real time.
  static var realTimeLimit: Self { .timeLimit(RealTime.timeLimit) }
}
