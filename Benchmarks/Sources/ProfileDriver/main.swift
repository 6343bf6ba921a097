import Contenders
import Dispatch

// A driver for profilers and for checking a workload outside the harness:
//   ProfileDriver storm queue|lower-bound|seed-style|work-item [calls]
//   ProfileDriver fan-out queue|actor|debounce|task-per-call [instances]
//   ProfileDriver keyed-arm|keyed-resubmit|keyed-due keyed-queue|keyed-actor|lower-bound|... [keys]
//   ProfileDriver stream debounced|async-algorithms|lower-bound [elements]
// e.g. valgrind --tool=callgrind .build/release/ProfileDriver storm queue 100000

let arguments = CommandLine.arguments
let workload = arguments.count > 1 ? arguments[1] : "storm"
let contender = Contender(rawValue: arguments.count > 2 ? arguments[2] : "queue") ?? .queue
let count = arguments.count > 3 ? Int(arguments[3]) ?? 100_000 : 100_000

func storm<D: SyncDebouncer>(_: D.Type) {
  let debouncer = D(delay: .milliseconds(1))
  let latch = Latch()
  let noop = Contenders.noop
  for _ in 0..<count { debouncer.submit(noop) }
  debouncer.submit { latch.open() }
  debouncer.settle()
  latch.wait()
}

/// Arms `count` instances once with a 10 ms delay and reports how many fired within 10 s.
func fanOut(arm: (@escaping Work) async -> Void) async {
  let fired = Locked(0)
  let start = DispatchTime.now().uptimeNanoseconds
  await arm { fired.withLock { $0 += 1 } }
  for _ in 0..<100 {
    if fired.withLock({ $0 }) == count { break }
    try? await Task.sleep(for: .milliseconds(100))
  }
  let elapsed = (DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
  print("fan-out \(contender.rawValue): \(fired.withLock { $0 }) of \(count) fired, \(elapsed) ms")
}

func fanOutSync<D: SyncDebouncer>(_: D.Type) async {
  let debouncers = (0..<count).map { _ in D(delay: .milliseconds(10)) }
  await fanOut { work in
    for debouncer in debouncers { debouncer.submit(work) }
  }
}

func fanOutAsync<D: AsyncDebouncer>(_: D.Type) async {
  let debouncers = (0..<count).map { _ in D(delay: .milliseconds(10)) }
  await fanOut { work in
    for debouncer in debouncers { await debouncer.submit(work) }
  }
}

/// Reads `count` Ints through a stream contender: buffered in an `AsyncStream` beforehand, then
/// from a base that never suspends.
func stream(_ contender: StreamContender) async {
  let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
  for element in 0..<count { continuation.yield(element) }
  continuation.finish()
  let start = DispatchTime.now().uptimeNanoseconds
  let last = await contender.consume(stream, interval: .milliseconds(1))
  let elapsed = DispatchTime.now().uptimeNanoseconds - start
  let perElement = elapsed / UInt64(count)
  print("stream \(contender.rawValue): last \(last ?? -1), \(perElement) ns per element")
  let syncStart = DispatchTime.now().uptimeNanoseconds
  let syncLast = await contender.consume(0..<count, interval: .milliseconds(1))
  let syncElapsed = DispatchTime.now().uptimeNanoseconds - syncStart
  print("  sync base: last \(syncLast ?? -1), \(syncElapsed / UInt64(count)) ns per element")
}

if workload == "stream" {
  let streamContender = StreamContender(rawValue: arguments.count > 2 ? arguments[2] : "")
  await stream(streamContender ?? .debounced)
} else if workload.hasPrefix("keyed-") {
  let keyed = KeyedContender(rawValue: arguments.count > 2 ? arguments[2] : "") ?? .keyedQueue
  switch keyed.driver {
  case .sync: keyedWorkload(workload, keyed, keys: count)
  case .async: await keyedWorkloadAwaiting(workload, keyed, keys: count)
  }
} else {
  switch (workload, contender.driver) {
  case ("fan-out", .sync(let type)): for _ in 0..<6 { await fanOutSync(type) }
  case ("fan-out", .async(let type)): for _ in 0..<6 { await fanOutAsync(type) }
  case (_, .sync(let type)): storm(type)
  case (_, .async): print("storm drives synchronous contenders only")
  }
}
