import Benchmark
import Contenders

extension KeyedContender {
  /// Registers one benchmark per keyed contender, named `workload:contender`.
  public static func registerEach(
    _ workload: String, configuration: Benchmark.Configuration,
    including include: (KeyedContender) -> Bool = { _ in true },
    body: @escaping @Sendable (any KeyedDebouncer.Type, Benchmark) -> Void
  ) {
    for contender in allCases where include(contender) {
      let type = contender.type
      Benchmark(contender.benchmarkName(workload), configuration: configuration) { benchmark in
        body(type, benchmark)
      }
    }
  }
}
