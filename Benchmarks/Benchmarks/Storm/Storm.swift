import Benchmark
import BenchmarkSupport
import Contenders
import DelayedPreemptiveDispatch
import Dispatch

// Preemption storm: `calls` submissions on one instance from 1 or 2 threads, then one final
// submission whose task opens a latch; measured until that task has run. Every contender gets
// the same 1 ms delay, so the wait for the deadline adds about 1 ns per call to each of them.

let calls = 1_000_000
let stormDelay = Duration.milliseconds(1)

let benchmarks: @Sendable () -> Void = {
  let configuration = Metrics.configuration(
    [.wallClock, .mallocCountTotal, Metrics.calls], warmup: 1, iterations: 10, seconds: 5)
  for threads in [1, 2] {
    Contender.registerEach(
      "storm-\(threads)-thread", configuration: configuration,
      sync: { type, benchmark in storm(type, threads: threads, benchmark: benchmark) },
      async: { type, benchmark in await storm(type, threads: threads, benchmark: benchmark) })
  }
  registerTicketBenchmarks(configuration)
}

func storm<D: SyncDebouncer>(_: D.Type, threads: Int, benchmark: Benchmark) {
  let debouncer = D(delay: stormDelay)
  let latch = Latch()
  let finish: Work = { latch.open() }
  let noop = Contenders.noop
  benchmark.startMeasurement()
  if threads == 1 {
    for _ in 0..<calls { debouncer.submit(noop) }
  } else {
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
      for _ in 0..<calls / threads { debouncer.submit(noop) }
    }
  }
  debouncer.submit(finish)
  debouncer.settle()
  latch.wait()
  blackHole(debouncer)  // a released instance cancels its pending task
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.calls, calls + 1)
}

func storm<D: AsyncDebouncer>(_: D.Type, threads: Int, benchmark: Benchmark) async {
  let debouncer = D(delay: stormDelay)
  let latch = Latch()
  let finish: AsyncWork = { latch.open() }
  let noop = asyncNoop
  benchmark.startMeasurement()
  if threads == 1 {
    for _ in 0..<calls { await debouncer.submit(noop) }
  } else {
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<threads {
        group.addTask {
          for _ in 0..<calls / threads { await debouncer.submit(noop) }
        }
      }
    }
  }
  await debouncer.submit(finish)
  await latch.wait()
  blackHole(debouncer)  // a released instance cancels its pending task
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.calls, calls + 1)
}
