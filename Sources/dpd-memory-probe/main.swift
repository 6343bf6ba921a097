import DPDHeapStatistics
import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// Measures the live heap of a keyed instance alone in its process, so that no test running
// beside it can move the reading: `KeyedMemoryTests` runs it and checks what it prints.
//
//   dpd-memory-probe keyed-queue|keyed-actor KEYS
//
// It makes KEYS keys pending (each for a minute, on a `ManualClock`), then runs them all with
// `flushAll()` and waits until the instance is idle, and prints three numbers: how many bytes
// the live heap grew by while the keys were pending, how many are left once they have run
// (both against the reading before the first key), and how many tasks ran. The resident growth
// per pending key that BENCHMARKS.md reports is the Benchmarks package's `keyed-memory`.
//
//   dpd-memory-probe adapter signal|pan|lockout SECONDS THREADS
//
// runs an adapter on real time under events that never pause (`AdapterSoak`).

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "adapter" {
  guard let seconds = Int(arguments[3]), let threads = Int(arguments[4]), seconds > 0, threads > 0
  else {
    print(AdapterSoak.usage)
    exit(2)
  }
  AdapterSoak.run(adapter: arguments[2], seconds: seconds, threads: threads)
  exit(0)
}
guard arguments.count == 3, ["keyed-queue", "keyed-actor"].contains(arguments[1]),
  let keys = Int(arguments[2]), keys > 0
else {
  print("usage: dpd-memory-probe keyed-queue|keyed-actor KEYS")
  print(AdapterSoak.usage)
  exit(2)
}

let clock = ManualClock()
let ran = LockBox(0)
let baseline: Int
let peak: Int
if arguments[1] == "keyed-queue" {
  let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Void>(clock: clock) { _, _ in
    ran.withLock { $0 += 1 }
  }
  queue.delay(-1, for: .seconds(1))  // warm up the instance's own storage
  queue.flushAll()
  queue.wait()
  baseline = Int(dpd_live_heap_bytes())
  for key in 0..<keys { queue.delay(key, for: .seconds(60)) }
  peak = Int(dpd_live_heap_bytes())
  queue.flushAll()
  queue.wait()
  print(peak - baseline, Int(dpd_live_heap_bytes()) - baseline, ran.withLock { $0 })
} else {
  let actor = KeyedDelayedPreemptiveActor<Int, Void, ManualClock>(clock: clock) { _, _ in
    ran.withLock { $0 += 1 }
  }
  await actor.delay(-1, for: .seconds(1))
  await actor.flushAll()
  await actor.wait()
  baseline = Int(dpd_live_heap_bytes())
  for key in 0..<keys { await actor.delay(key, for: .seconds(60)) }
  peak = Int(dpd_live_heap_bytes())
  await actor.flushAll()
  await actor.wait()
  print(peak - baseline, Int(dpd_live_heap_bytes()) - baseline, ran.withLock { $0 })
}
