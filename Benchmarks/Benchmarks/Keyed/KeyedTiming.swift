import Benchmark
import BenchmarkSupport
import Contenders
import DelayedPreemptiveDispatch
import Dispatch

/// The time budget for arming before the shared deadline of the due-at-once workload: arming
/// 10⁶ keys takes seconds for every contender but the lower bound, and tasks that fall due
/// while arming would hide the cost of running them.
let armingBudget: UInt64 = 20_000_000_000
let probes = 200
let probeDelay = Duration.milliseconds(10)

/// Due at once: `keys` keys armed for one shared instant; `drainNanoseconds` runs from that
/// instant (or from the end of arming, when arming took longer) until every task has run.
func dueAtOnce<D: KeyedDebouncer>(_: D.Type, benchmark: Benchmark) {
  let countdown = Countdown(count: keys)
  let debouncer = D { _ in countdown.arrive() }
  countdown.openLatch(after: 90)
  let deadline = uptime() + armingBudget
  for key in 0..<keys {
    debouncer.submit(key, delay: .nanoseconds(Int64(deadline) - Int64(uptime())))
  }
  let armed = uptime()
  debouncer.settle()
  countdown.latch.wait()
  let ran = uptime()
  benchmark.measurement(Metrics.drainNanoseconds, Int(ran - max(deadline, armed)))
  benchmark.measurement(Metrics.calls, keys)
  if countdown.remaining > 0 {
    benchmark.error("\(countdown.remaining) of \(keys) tasks had not run 90 s after arming")
  }
  debouncer.cancelAll()
  blackHole(debouncer)
}

func registerKeyedLatency(_ configuration: Benchmark.Configuration) {
  KeyedContender.registerEach(
    "keyed-latency", configuration: configuration, including: { $0 != .lowerBound },
    sync: { type, benchmark in lateness(type, benchmark: benchmark) },
    async: { type, benchmark in await lateness(type, benchmark: benchmark) })
  Benchmark("keyed-latency:single-queue", configuration: configuration) { benchmark in
    singleQueueLateness(benchmark: benchmark)
  }
}

/// The probe in flight: the key it submitted, when its task ran, and the latch it opens.
struct Probe: Sendable {
  var key: Int
  var fired: UInt64 = 0
  let latch = Latch()
}

/// The task of the lateness workloads: it notes when the current probe's key ran and opens its
/// latch; other keys do nothing.
func probeTask(_ probe: Locked<Probe?>) -> @Sendable (Int) -> Void {
  { key in
    let now = uptime()
    probe.withLock { probe -> Latch? in
      guard probe?.key == key else { return nil }
      probe?.fired = now
      return probe?.latch
    }?.open()
  }
}

/// Fire lateness with `keys` keys pending: `probes` times, a new key with a 10 ms delay; the
/// overshoot is how long after its deadline its task started.
func lateness<D: KeyedDebouncer>(_: D.Type, benchmark: Benchmark) {
  let probe = Locked<Probe?>(nil)
  let debouncer = D(task: probeTask(probe))
  for key in 0..<keys { debouncer.submit(key, delay: farDelay) }
  for index in 0..<probes {
    let current = Probe(key: keys + index)
    probe.withLock { $0 = current }
    let start = uptime()
    debouncer.submit(current.key, delay: probeDelay)
    current.latch.wait()
    record(start: start, fired: probe.withLock { $0?.fired ?? 0 }, benchmark)
  }
  debouncer.cancelAll()
  blackHole(debouncer)
}

/// Due at once, awaited: the keys armed from the benchmark's task, which then awaits the last
/// task; the drain starts at the shared deadline, as above.
func dueAtOnce<D: AsyncKeyedDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let countdown = Countdown(count: keys)
  let debouncer = D { _ in countdown.arrive() }
  countdown.openLatch(after: 90)
  let deadline = uptime() + armingBudget
  for key in 0..<keys {
    await debouncer.submit(key, delay: .nanoseconds(Int64(deadline) - Int64(uptime())))
  }
  let armed = uptime()
  await countdown.latch.wait()
  let ran = uptime()
  benchmark.measurement(Metrics.drainNanoseconds, Int(ran - max(deadline, armed)))
  benchmark.measurement(Metrics.calls, keys)
  if countdown.remaining > 0 {
    benchmark.error("\(countdown.remaining) of \(keys) tasks had not run 90 s after arming")
  }
  await debouncer.cancelAll()
  blackHole(debouncer)
}

/// Fire lateness, awaited: each probe submitted from the benchmark's task, which then awaits the
/// probe's task.
func lateness<D: AsyncKeyedDebouncer>(_: D.Type, benchmark: Benchmark) async {
  let probe = Locked<Probe?>(nil)
  let debouncer = D(task: probeTask(probe))
  for key in 0..<keys { await debouncer.submit(key, delay: farDelay) }
  for index in 0..<probes {
    let current = Probe(key: keys + index)
    probe.withLock { $0 = current }
    let start = uptime()
    await debouncer.submit(current.key, delay: probeDelay)
    await current.latch.wait()
    record(start: start, fired: probe.withLock { $0?.fired ?? 0 }, benchmark)
  }
  await debouncer.cancelAll()
  blackHole(debouncer)
}

/// The baseline: the same probes on one `DelayedPreemptiveDispatchQueue` with nothing else
/// pending.
func singleQueueLateness(benchmark: Benchmark) {
  let queue = DelayedPreemptiveDispatchQueue(label: "bench.single")
  for _ in 0..<probes {
    let fired = Locked<UInt64>(0)
    let latch = Latch()
    let start = uptime()
    queue.delay(for: probeDelay) {
      fired.withLock { $0 = uptime() }
      latch.open()
    }
    latch.wait()
    record(start: start, fired: fired.withLock { $0 }, benchmark)
  }
}

/// Records how late `fired` was for a deadline `probeDelay` after `start`; early counts as 0.
func record(start: UInt64, fired: UInt64, _ benchmark: Benchmark) {
  let late = Int64(fired) - Int64(start) - probeDelay.nanoseconds
  benchmark.measurement(Metrics.overshootNanoseconds, Int(max(0, late)))
}
