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
// (both against the reading before the first key), and how many tasks ran. On Linux it also
// prints to standard error how much the resident set grew per pending key (the figure
// BENCHMARKS.md reports), for a quick look without the benchmarks package.

let arguments = CommandLine.arguments
guard arguments.count == 3, ["keyed-queue", "keyed-actor"].contains(arguments[1]),
  let keys = Int(arguments[2]), keys > 0
else {
  print("usage: dpd-memory-probe keyed-queue|keyed-actor KEYS")
  exit(2)
}

/// The resident set in bytes, where /proc tells it; 0 elsewhere.
func residentBytes() -> Int {
  #if os(Linux)
    let descriptor = open("/proc/self/statm", O_RDONLY)
    guard descriptor >= 0 else { return 0 }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard count > 0 else { return 0 }
    // statm: total pages, resident pages, …
    let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * sysconf(Int32(_SC_PAGESIZE))
  #else
    return 0
  #endif
}

/// Prints the resident growth per key to standard error.
func reportResidentGrowth(from start: Int) {
  let growth = Double(residentBytes() - start) / Double(keys)
  let line = Array("resident growth per pending key: \(growth) B\n".utf8)
  _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

let clock = ManualClock()
var residentStart = 0
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
  residentStart = residentBytes()
  for key in 0..<keys { queue.delay(key, for: .seconds(60)) }
  peak = Int(dpd_live_heap_bytes())
  reportResidentGrowth(from: residentStart)
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
  residentStart = residentBytes()
  for key in 0..<keys { await actor.delay(key, for: .seconds(60)) }
  peak = Int(dpd_live_heap_bytes())
  reportResidentGrowth(from: residentStart)
  await actor.flushAll()
  await actor.wait()
  print(peak - baseline, Int(dpd_live_heap_bytes()) - baseline, ran.withLock { $0 })
}
