import Benchmark
import BenchmarkSupport
import Contenders
import DelayedPreemptiveDispatch
import Dispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

// Threads: `instances` library queues, made before the measurement, each armed once with a
// 10 ms delay. Wall clock runs until every task has run; `threadsUsed` counts the distinct
// threads the tasks ran on. Two targets: the default (`target: nil`) and `.global()`, which the
// default should match. Each task does a little work, so that a pool that can grow shows it.

let instances = 10_000
let threadsDelay = Duration.milliseconds(10)

let benchmarks: @Sendable () -> Void = {
  let configuration = Metrics.configuration(
    [.wallClock, Metrics.threadsUsed, Metrics.calls], warmup: 1, iterations: 5, seconds: 10)
  Benchmark("threads:default-target", configuration: configuration) { benchmark in
    fire(target: nil, benchmark: benchmark)
  }
  Benchmark("threads:global-target", configuration: configuration) { benchmark in
    fire(target: .global(), benchmark: benchmark)
  }
}

func fire(target: DispatchQueue?, benchmark: Benchmark) {
  let queues = (0..<instances).map { index in
    DelayedPreemptiveDispatchQueue(label: "threads.\(index)", target: target)
  }
  let threads = Locked(Set<UInt>())
  let countdown = Countdown(count: instances)
  countdown.openLatch(after: 30)
  benchmark.startMeasurement()
  for queue in queues {
    queue.delay(for: threadsDelay) {
      let thread = threadID()
      var spin = 0
      for value in 0..<2_000 { spin &+= value }
      blackHole(spin)
      threads.withLock { _ = $0.insert(thread) }
      countdown.arrive()
    }
  }
  countdown.latch.wait()
  benchmark.stopMeasurement()
  // Released queues cancel their pending task, by design: keep them until every task ran.
  blackHole(queues)
  benchmark.measurement(Metrics.threadsUsed, threads.withLock { $0.count })
  benchmark.measurement(Metrics.calls, instances)
  let missing = countdown.remaining
  if missing > 0 {
    benchmark.error("\(missing) of \(instances) tasks had not run 30 s after arming")
  }
}

/// The calling thread, as a number: `pthread_t` is a pointer on Apple platforms, an integer on
/// Linux.
func threadID() -> UInt {
  #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
  #else
    return UInt(pthread_self())
  #endif
}
