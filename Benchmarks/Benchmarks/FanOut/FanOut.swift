import Benchmark
import BenchmarkSupport
import Contenders
import Dispatch

// Fan-out: `instances` debouncers, made before the measurement, each armed once with a 10 ms
// delay. Wall clock runs until every task has fired; `armNanoseconds` is the arming loop alone.

let instances = 100_000
let fanOutDelay = Duration.milliseconds(10)

let benchmarks: @Sendable () -> Void = {
  let configuration = Metrics.configuration(
    [.wallClock, Metrics.armNanoseconds, .mallocCountTotal, Metrics.calls],
    warmup: 1, iterations: 5, seconds: 5)
  Contender.registerEach(
    "fan-out", configuration: configuration,
    sync: { type, benchmark in fanOut(type, benchmark: benchmark) },
    async: { type, benchmark in await fanOut(type, benchmark: benchmark) })
}

func fanOut<D: SyncDebouncer>(_: D.Type, benchmark: Benchmark) {
  let debouncers = (0..<instances).map { _ in D(delay: fanOutDelay) }
  let countdown = Countdown(count: instances)
  let fire: Work = { countdown.arrive() }
  countdown.openLatch(after: 30)
  benchmark.startMeasurement()
  let start = DispatchTime.now().uptimeNanoseconds
  for debouncer in debouncers { debouncer.submit(fire) }
  let armed = DispatchTime.now().uptimeNanoseconds
  for debouncer in debouncers { debouncer.settle() }
  countdown.latch.wait()
  benchmark.stopMeasurement()
  // Released instances cancel their pending task, by design: keep them until every task ran.
  blackHole(debouncers)
  benchmark.measurement(Metrics.armNanoseconds, Int(armed - start))
  benchmark.measurement(Metrics.calls, instances)
  reportMissing(countdown, benchmark)
}

func fanOut<D: AsyncDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let debouncers = (0..<instances).map { _ in D(delay: fanOutDelay) }
  let countdown = Countdown(count: instances)
  let fire: AsyncWork = { countdown.arrive() }
  countdown.openLatch(after: 30)
  benchmark.startMeasurement()
  let start = DispatchTime.now().uptimeNanoseconds
  for debouncer in debouncers { await debouncer.submit(fire) }
  let armed = DispatchTime.now().uptimeNanoseconds
  await countdown.latch.wait()
  benchmark.stopMeasurement()
  // Released instances cancel their pending task, by design: keep them until every task ran.
  blackHole(debouncers)
  benchmark.measurement(Metrics.armNanoseconds, Int(armed - start))
  benchmark.measurement(Metrics.calls, instances)
  reportMissing(countdown, benchmark)
}

/// Fails the benchmark, rather than hanging it, when some task had not run after 30 s.
func reportMissing(_ countdown: Countdown, _ benchmark: Benchmark) {
  let missing = countdown.remaining
  guard missing > 0 else { return }
  benchmark.error("\(missing) of \(instances) tasks had not run 30 s after arming")
}
