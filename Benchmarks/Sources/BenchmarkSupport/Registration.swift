import Benchmark
import Contenders

extension Contender {
  /// Registers one benchmark per contender, named `workload:contender`: `sync` measures a
  /// synchronous debouncer, `async` one that is called with `await`.
  public static func registerEach(
    _ workload: String, configuration: Benchmark.Configuration,
    including include: (Contender) -> Bool = { _ in true },
    sync: @escaping @Sendable (any SyncDebouncer.Type, Benchmark) -> Void,
    async: @escaping @Sendable (any AsyncDebouncer.Type, Benchmark) async -> Void
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
