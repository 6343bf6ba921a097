import Contenders
import DelayedPreemptiveDispatch
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// The actor storm's wall-clock guard (scripts/actor-storm.sh): what an instruction count cannot
// see, a hop that suspends, a thread switch or a timer woken per call, shows here as time.
//
//   ActorStorm [calls] [rounds]
//
// A preemption storm from one task, as a user writes it:
// `for i in 0..<calls { await actor.delay(.milliseconds(5)) { sink.hit(i) } }`, timed until the
// final task starts, minus the 5 ms. The library's actor and an actor with a Task per call
// (cancelling the previous one) run in the same process, in interleaved rounds (ABBA, after one
// warm-up round each), so that a loaded machine slows both alike. Per round it reads the ratio
// of the two, and the process's context switches per call (getrusage). The verdict is on the
// median of the rounds' ratios: the actor must take at most 0.2× the time of a Task per call
// (at least 5× faster). Exit status 1 when it does not.

let arguments = CommandLine.arguments
let calls = arguments.count > 1 ? Int(arguments[1]) ?? 200_000 : 200_000
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 8 : 8
let stormDelay = Duration.milliseconds(5)
let bound = 0.2

/// What the storm's tasks write: the index of the last one that ran.
final class Sink: Sendable {
  private let last = Locked(-1)
  func hit(_ index: Int) { last.withLock { $0 = index } }
}

/// One round's figures for one contender.
struct Round {
  var nanosecondsPerCall: Double
  var contextSwitchesPerCall: Double
}

/// Voluntary and involuntary context switches of the whole process so far.
func contextSwitches() -> Int {
  var usage = rusage()
  #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
  #else
    getrusage(RUSAGE_SELF, &usage)
  #endif
  return Int(usage.ru_nvcsw + usage.ru_nivcsw)
}

func storm<D: AsyncDebouncer>(_: D.Type) async -> Round {
  let debouncer = D(delay: stormDelay)
  let sink = Sink()
  let latch = Latch()
  let switches = contextSwitches()
  let start = DispatchTime.now().uptimeNanoseconds
  for index in 0..<calls - 1 { await debouncer.submit { sink.hit(index) } }
  await debouncer.submit {
    sink.hit(calls - 1)
    latch.open()
  }
  await latch.wait()
  let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) - 5e6
  let switched = contextSwitches() - switches
  return Round(
    nanosecondsPerCall: elapsed / Double(calls),
    contextSwitchesPerCall: Double(switched) / Double(calls))
}

func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// `value` rounded to `places` decimals, as text.
func rounded(_ value: Double, _ places: Int = 1) -> String {
  var scale = 1.0
  for _ in 0..<places { scale *= 10 }
  return "\((value * scale).rounded() / scale)"
}

func loadAverage() -> String {
  var loads = [Double](repeating: 0, count: 3)
  guard getloadavg(&loads, 3) == 3 else { return "unknown" }
  return loads.map { rounded($0, 2) }.joined(separator: " ")
}

func figure(_ value: Double) -> String {
  value >= 100 ? "\(Int(value.rounded()))" : rounded(value)
}

let startLoad = loadAverage()
print("calls \(calls), rounds \(rounds), load average at the start \(startLoad)")
_ = await storm(ActorContender.self)
_ = await storm(TaskPerCallDebouncer.self)
var actors: [Round] = []
var tasks: [Round] = []
var ratios: [Double] = []
for round in 0..<rounds {
  let actorFirst = round % 4 == 0 || round % 4 == 3
  var actor: Round
  var task: Round
  if actorFirst {
    actor = await storm(ActorContender.self)
    task = await storm(TaskPerCallDebouncer.self)
  } else {
    task = await storm(TaskPerCallDebouncer.self)
    actor = await storm(ActorContender.self)
  }
  actors.append(actor)
  tasks.append(task)
  ratios.append(actor.nanosecondsPerCall / task.nanosecondsPerCall)
  print(
    "round \(round): actor \(figure(actor.nanosecondsPerCall)) ns/call,"
      + " task per call \(figure(task.nanosecondsPerCall)) ns/call,"
      + " ratio \(rounded(ratios[round], 3));"
      + " context switches per call: actor \(rounded(actor.contextSwitchesPerCall, 4)),"
      + " task per call \(rounded(task.contextSwitchesPerCall, 4))")
}
let ratio = median(ratios)
let holds = ratio <= bound
// One line for scripts/actor-storm.sh to parse.
print(
  "result actor-ns=\(figure(median(actors.map(\.nanosecondsPerCall))))"
    + " task-ns=\(figure(median(tasks.map(\.nanosecondsPerCall))))"
    + " ratio=\(rounded(ratio, 3))"
    + " actor-switches=\(rounded(median(actors.map(\.contextSwitchesPerCall)), 4))"
    + " task-switches=\(rounded(median(tasks.map(\.contextSwitchesPerCall)), 4))"
    + " load=\(startLoad.split(separator: " ").first ?? "unknown")"
    + " verdict=\(holds ? "holds" : "missed")")
exit(holds ? 0 : 1)
