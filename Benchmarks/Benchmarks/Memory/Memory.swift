import Benchmark
import BenchmarkSupport
import Contenders

// Memory: `calls` submissions on one instance with a 1 s delay, so that all but the last are
// preempted and, for the idioms with a timer per call, still pending. Memory is read right
// after the last call returns; then the iteration waits for the final task. Each benchmark runs
// in a process of its own, and one iteration with no warm-up, so that no page freed by an
// earlier iteration hides growth.

let calls = 1_000_000
let pendingDelay = Duration.seconds(1)

let benchmarks: @Sendable () -> Void = {
  let configuration = Metrics.configuration(
    [Metrics.residentGrowthBytes, .mallocCountTotal, Metrics.calls],
    warmup: 0, iterations: 1, seconds: 10)
  Contender.registerEach(
    "memory", configuration: configuration,
    sync: { type, benchmark in pendingMemory(type, benchmark: benchmark) },
    async: { type, benchmark in await pendingMemory(type, benchmark: benchmark) })
}

func record(_ before: Int, _ benchmark: Benchmark) {
  let growth = ProcessMemory.residentBytes() - before
  benchmark.measurement(Metrics.residentGrowthBytes, max(0, growth))
  benchmark.measurement(Metrics.calls, calls)
}

func pendingMemory<D: SyncDebouncer>(_: D.Type, benchmark: Benchmark) {
  let debouncer = D(delay: pendingDelay)
  let latch = Latch()
  let noop = Contenders.noop
  benchmark.startMeasurement()
  let before = ProcessMemory.residentBytes()
  for _ in 1..<calls { debouncer.submit(noop) }
  debouncer.submit { latch.open() }
  record(before, benchmark)
  benchmark.stopMeasurement()
  debouncer.settle()
  latch.wait()
  blackHole(debouncer)  // a released instance cancels its pending task
}

func pendingMemory<D: AsyncDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let debouncer = D(delay: pendingDelay)
  let latch = Latch()
  let noop = asyncNoop
  benchmark.startMeasurement()
  let before = ProcessMemory.residentBytes()
  for _ in 1..<calls { await debouncer.submit(noop) }
  await debouncer.submit { latch.open() }
  record(before, benchmark)
  benchmark.stopMeasurement()
  await latch.wait()
  blackHole(debouncer)  // a released instance cancels its pending task
}
