import Benchmark

/// The figures the workloads record besides wall clock and mallocs, and one configuration shape,
/// so that every exported value is a plain count of nanoseconds, bytes or calls.
public enum Metrics {
  /// How many submissions (or instances) one iteration made; the report divides by it.
  public static let calls = BenchmarkMetric.custom("calls", polarity: .prefersLarger)
  /// Fan-out: nanoseconds to arm every instance once.
  public static let armNanoseconds = BenchmarkMetric.custom("armNanoseconds")
  /// Fire latency: nanoseconds between the deadline and the start of the task.
  public static let overshootNanoseconds = BenchmarkMetric.custom("overshootNanoseconds")
  /// Memory: growth of the resident set while calls are pending.
  public static let residentGrowthBytes = BenchmarkMetric.custom("residentGrowthBytes")
  /// Threads: distinct threads the tasks of one iteration ran on.
  public static let threadsUsed = BenchmarkMetric.custom("threadsUsed")
  /// Keyed, due at once: nanoseconds from the keys' shared deadline (or the end of arming, if
  /// later) until every task has run.
  public static let drainNanoseconds = BenchmarkMetric.custom("drainNanoseconds")

  /// Metrics exported as plain counts rather than scaled to K or M.
  private static let counts: [BenchmarkMetric] = [
    calls, armNanoseconds, overshootNanoseconds, residentGrowthBytes, threadsUsed,
    drainNanoseconds,
    .mallocCountTotal,
  ]

  public static func configuration(
    _ metrics: [BenchmarkMetric], warmup: Int, iterations: Int, seconds: Int
  ) -> Benchmark.Configuration {
    .init(
      metrics: metrics,
      timeUnits: .nanoseconds,
      units: Dictionary(uniqueKeysWithValues: counts.map { ($0, .count) }),
      warmupIterations: warmup,
      scalingFactor: .one,
      maxDuration: .seconds(seconds),
      maxIterations: iterations)
  }
}
