import Benchmark
import BenchmarkSupport
import Contenders
import Dispatch

// Fire latency: one submission with a 10 ms delay on a fresh instance; `overshootNanoseconds`
// is how long after the deadline its task started. The baseline is one `clock_nanosleep` of
// 10 ms. The lower bound has no timer, so it has no latency of its own and is left out.

let deadline = Duration.milliseconds(10)

let benchmarks: @Sendable () -> Void = {
  let configuration = Metrics.configuration(
    [Metrics.overshootNanoseconds], warmup: 5, iterations: 200, seconds: 6)
  Benchmark("latency:clock-nanosleep", configuration: configuration) { benchmark in
    let start = DispatchTime.now().uptimeNanoseconds
    monotonicSleep(nanoseconds: UInt64(deadline.nanoseconds))
    record(start: start, fired: DispatchTime.now().uptimeNanoseconds, benchmark)
  }
  Contender.registerEach(
    "latency", configuration: configuration,
    including: { $0 != .lowerBound },
    sync: { type, benchmark in overshoot(type, benchmark: benchmark) },
    async: { type, benchmark in await overshoot(type, benchmark: benchmark) })
}

/// Records how late `fired` was for a deadline `deadline` after `start`; early counts as 0.
func record(start: UInt64, fired: UInt64, _ benchmark: Benchmark) {
  let late = Int64(fired) - Int64(start) - deadline.nanoseconds
  benchmark.measurement(Metrics.overshootNanoseconds, Int(max(0, late)))
}

func overshoot<D: SyncDebouncer>(_: D.Type, benchmark: Benchmark) {
  let debouncer = D(delay: deadline)
  let fired = Locked<UInt64>(0)
  let latch = Latch()
  let start = DispatchTime.now().uptimeNanoseconds
  debouncer.submit {
    fired.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
    latch.open()
  }
  latch.wait()
  blackHole(debouncer)  // a released instance cancels its pending task
  record(start: start, fired: fired.withLock { $0 }, benchmark)
}

func overshoot<D: AsyncDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let debouncer = D(delay: deadline)
  let fired = Locked<UInt64>(0)
  let latch = Latch()
  let start = DispatchTime.now().uptimeNanoseconds
  await debouncer.submit {
    fired.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
    latch.open()
  }
  await latch.wait()
  blackHole(debouncer)  // a released instance cancels its pending task
  record(start: start, fired: fired.withLock { $0 }, benchmark)
}
