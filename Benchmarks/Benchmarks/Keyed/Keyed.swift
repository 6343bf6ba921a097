import Benchmark
import BenchmarkSupport
import Contenders
import Dispatch

// Keyed bursts: the keyed queue and the keyed actor against a locked Dictionary of queues, a
// sleeping Task per key and the lower bound (a locked Dictionary of (key, deadline, value), no
// timer). Keys are Ints and the value is Void. Each benchmark is one iteration with no warm-up,
// in a process of its own: the workloads are large (10⁶ keys) and the machine is shared.
//
// Every workload has a second form for the keyed actor, the same steps with each submission
// awaited from the benchmark's task (as a user calls an actor), so that the other contenders run
// exactly the loops they ran before it was added.

/// Distinct keys armed by the arm, memory, due and latency workloads.
let keys = 1_000_000
/// Keys kept pending while the re-submission workload submits to them again.
let resubmittedKeys = 10_000
let resubmissions = 1_000_000
/// A delay that no workload waits for: these keys stay pending until `cancelAll()`.
let farDelay = Duration.seconds(60)

let benchmarks: @Sendable () -> Void = {
  let once = { (metrics: [BenchmarkMetric]) in
    Metrics.configuration(metrics, warmup: 0, iterations: 1, seconds: 120)
  }
  KeyedContender.registerEach(
    "keyed-arm", configuration: once([Metrics.armNanoseconds, .mallocCountTotal, Metrics.calls]),
    sync: { type, benchmark in arm(type, benchmark: benchmark) },
    async: { type, benchmark in await arm(type, benchmark: benchmark) })
  KeyedContender.registerEach(
    "keyed-resubmit", configuration: once([.wallClock, .mallocCountTotal, Metrics.calls]),
    sync: { type, benchmark in resubmit(type, benchmark: benchmark) },
    async: { type, benchmark in await resubmit(type, benchmark: benchmark) })
  KeyedContender.registerEach(
    "keyed-memory", configuration: once([Metrics.residentGrowthBytes, Metrics.calls]),
    sync: { type, benchmark in pendingMemory(type, benchmark: benchmark) },
    async: { type, benchmark in await pendingMemory(type, benchmark: benchmark) })
  KeyedContender.registerEach(
    "keyed-due", configuration: once([Metrics.drainNanoseconds, Metrics.calls]),
    sync: { type, benchmark in dueAtOnce(type, benchmark: benchmark) },
    async: { type, benchmark in await dueAtOnce(type, benchmark: benchmark) })
  registerKeyedLatency(once([Metrics.overshootNanoseconds]))
}

func uptime() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Arming: `keys` distinct keys, each submitted once, from one thread.
func arm<D: KeyedDebouncer>(_: D.Type, benchmark: Benchmark) {
  let debouncer = D { _ in }
  benchmark.startMeasurement()
  let start = uptime()
  for key in 0..<keys { debouncer.submit(key, delay: farDelay) }
  let armed = uptime()
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.armNanoseconds, Int(armed - start))
  benchmark.measurement(Metrics.calls, keys)
  debouncer.cancelAll()
  blackHole(debouncer)
}

/// Re-submitting: `resubmittedKeys` keys pending, then `resubmissions` submissions cycling over
/// them, each for a key that is already pending.
func resubmit<D: KeyedDebouncer>(_: D.Type, benchmark: Benchmark) {
  let debouncer = D { _ in }
  for key in 0..<resubmittedKeys { debouncer.submit(key, delay: farDelay) }
  benchmark.startMeasurement()
  for index in 0..<resubmissions { debouncer.submit(index % resubmittedKeys, delay: farDelay) }
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.calls, resubmissions)
  debouncer.cancelAll()
  blackHole(debouncer)
}

/// Memory: growth of the resident set with `keys` keys pending.
func pendingMemory<D: KeyedDebouncer>(_: D.Type, benchmark: Benchmark) {
  let debouncer = D { _ in }
  let before = ProcessMemory.residentBytes()
  for key in 0..<keys { debouncer.submit(key, delay: farDelay) }
  let growth = ProcessMemory.residentBytes() - before
  benchmark.measurement(Metrics.residentGrowthBytes, max(0, growth))
  benchmark.measurement(Metrics.calls, keys)
  debouncer.cancelAll()
  blackHole(debouncer)
}

/// Arming, awaited: the same keys from the benchmark's task, each submission awaited.
func arm<D: AsyncKeyedDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let debouncer = D { _ in }
  benchmark.startMeasurement()
  let start = uptime()
  for key in 0..<keys { await debouncer.submit(key, delay: farDelay) }
  let armed = uptime()
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.armNanoseconds, Int(armed - start))
  benchmark.measurement(Metrics.calls, keys)
  await debouncer.cancelAll()
  blackHole(debouncer)
}

/// Re-submitting, awaited.
func resubmit<D: AsyncKeyedDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let debouncer = D { _ in }
  for key in 0..<resubmittedKeys { await debouncer.submit(key, delay: farDelay) }
  benchmark.startMeasurement()
  for index in 0..<resubmissions {
    await debouncer.submit(index % resubmittedKeys, delay: farDelay)
  }
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.calls, resubmissions)
  await debouncer.cancelAll()
  blackHole(debouncer)
}

/// Memory, awaited.
func pendingMemory<D: AsyncKeyedDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let debouncer = D { _ in }
  let before = ProcessMemory.residentBytes()
  for key in 0..<keys { await debouncer.submit(key, delay: farDelay) }
  let growth = ProcessMemory.residentBytes() - before
  benchmark.measurement(Metrics.residentGrowthBytes, max(0, growth))
  benchmark.measurement(Metrics.calls, keys)
  await debouncer.cancelAll()
  blackHole(debouncer)
}
