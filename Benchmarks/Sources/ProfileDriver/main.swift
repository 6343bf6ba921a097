import Contenders
import Dispatch

// A synchronous driver for profilers: `ProfileDriver queue|lower-bound [calls]` runs the
// 1-thread preemption storm on one contender, with no benchmark harness around it, e.g.
//   valgrind --tool=callgrind .build/release/ProfileDriver queue 100000

let arguments = CommandLine.arguments
let contender = arguments.count > 1 ? arguments[1] : "queue"
let calls = arguments.count > 2 ? Int(arguments[2]) ?? 100_000 : 100_000

func storm<D: SyncDebouncer>(_: D.Type) {
  let debouncer = D(delay: .milliseconds(1))
  let latch = Latch()
  let noop = Contenders.noop
  for _ in 0..<calls { debouncer.submit(noop) }
  debouncer.submit { latch.open() }
  debouncer.settle()
  latch.wait()
}

switch contender {
case "lower-bound": storm(LowerBound.self)
case "seed-style": storm(SeedStyleDebouncer.self)
case "work-item": storm(WorkItemDebouncer.self)
default: storm(QueueContender.self)
}
print("\(contender): \(calls) calls done")
