import Benchmark
import Contenders

extension KeyedContender {
  /// Registers one benchmark per keyed contender, named `workload:contender`: `sync` measures a
  /// contender called from a thread, `async` one called with `await` (the keyed actor).
  public static func registerEach(
    _ workload: String, configuration: Benchmark.Configuration,
    including include: (KeyedContender) -> Bool = { _ in true },
    sync: @escaping @Sendable (any KeyedDebouncer.Type, Benchmark) -> Void,
    async: @escaping @Sendable (any AsyncKeyedDebouncer.Type, Benchmark) async -> Void
  ) {
    for contender in allCases where include(contender) {
      let name = contender.benchmarkName(workload)
      switch contender.driver {
      case .sync(let type):
        Benchmark(name, configuration: configuration) { benchmark in sync(type, benchmark) }
      case .async(let type):
        Benchmark(name, configuration: configuration) { benchmark in await async(type, benchmark) }
      }
    }
  }
}
