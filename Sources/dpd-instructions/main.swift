import DelayedPreemptiveDispatch
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// The client that scripts/instructions.sh runs under callgrind: one workload, `calls` times, in
// `measuredLoop`, the only function callgrind counts (`--toggle-collect=*measuredLoop*`). It imports
// the library as any client does, so the keyed queue's `@inlinable` path is specialised here,
// as in a user's module.
//
//   dpd-instructions WORKLOAD CALLS
//
// The keyed actor's workloads await each call from one task, as a user does: the task hops onto
// the idle actor and back on the same thread, so the hops are counted with the call.
//
// The stream workloads read `calls` elements of a base that never suspends through
// `debounced(for:)` or `throttled(for:)`, consumed with `for await` in a task: the figure is the
// operator's cost per element (the reading task's transition, the clock reading, the lock).
//
// Every delay is an hour: no timer fires while the process runs, and releasing the instances
// at the end cancels what is pending.

enum Workload: String, CaseIterable {
  /// `DelayedPreemptiveDispatchQueue.delay(for:task:)` joining a pending burst.
  case queuePreempt = "queue-preempt"
  /// A new key on `KeyedDelayedPreemptiveDispatchQueue<Int, Void>`.
  case keyedArm = "keyed-arm"
  /// A new key on that keyed queue, and its share of one `cancelAll()` after the last key:
  /// what a key costs from its first submission until it is gone.
  case keyedArmCancel = "keyed-arm-cancel"
  /// A key already pending on that keyed queue, submitted again.
  case keyedResubmit = "keyed-resubmit"
  /// `KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>`, bursts of 10 submissions of `[Int]`,
  /// the last value wins.
  case lastWins10 = "keyed-last-wins-10"
  /// The same with `combine: { $0 += $1 }`: every value kept.
  case append10 = "keyed-append-10"
  /// Bursts of 10,000 submissions, the last value wins.
  case lastWins10k = "keyed-last-wins-10k"
  /// Bursts of 10,000 submissions appended: each costs about what it does in a burst of 10
  /// when `combine` appends in place, and grows with the burst when the value is copied.
  case append10k = "keyed-append-10k"
  /// A new key on `KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock>`, awaited from a task.
  case actorArm = "actor-arm"
  /// A key already pending on that actor, submitted again (as `keyed-resubmit`).
  case actorResubmit = "actor-resubmit"
  /// `DelayedPreemptiveActor<ContinuousClock>.delay(_:task:)` joining a pending burst, awaited
  /// from a task: the actor's side of `queue-preempt`.
  case actorPreempt = "actor-preempt"
  /// `queue-preempt` on a queue with `minimumSpacing` (`.throttle`): the spacing's cost on the
  /// path of a submission that joins a pending burst.
  case queueThrottle = "queue-throttle"
  /// `keyed-resubmit` on a keyed queue with `minimumSpacing`.
  case keyedThrottleResubmit = "keyed-throttle-resubmit"
  /// An element of a base that never suspends, read through `debounced(for:)`: every element
  /// joins the one burst, whose timer never fires.
  case streamDebounced = "stream-debounced"
  /// The same through `throttled(for:)`: the first element is emitted at once, every later one
  /// joins the burst that waits for the interval's end.
  case streamThrottled = "stream-throttled"

  /// Submissions per burst of the `[Int]` workloads.
  var burst: Int? {
    switch self {
    case .lastWins10, .append10: 10
    case .lastWins10k, .append10k: 10_000
    default: nil
    }
  }

  /// The keys pending before a re-submission loop; each loop call submits one of them again.
  static let resubmittedKeys = 1_000
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let workload = Workload(rawValue: arguments[1]),
  let calls = Int(arguments[2]), calls > 0
else {
  let names = Workload.allCases.map(\.rawValue).joined(separator: "|")
  print("usage: dpd-instructions \(names) CALLS")
  exit(2)
}

let hour = Duration.seconds(3_600)

let throttles = [Workload.queueThrottle, .keyedThrottleResubmit].contains(workload)
let options = throttles ? DelayOptions.throttle(hour) : DelayOptions()
let queue = DelayedPreemptiveDispatchQueue(label: "dpd-instructions", options: options)
let keyed = KeyedDelayedPreemptiveDispatchQueue<Int, Void>(
  label: "dpd-instructions.keyed", options: options
) { _, _ in }
let actor = KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock> { _, _ in }
let single = DelayedPreemptiveActor<ContinuousClock>()
let appending = [Workload.append10, .append10k].contains(workload)
let values =
  appending
  ? KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>(
    label: "dpd-instructions.values", combine: { $0 += $1 }, task: { _, _ in })
  : KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>(label: "dpd-instructions.values") { _, _ in }

// Set-up, not counted: the burst that the queue's calls join, the keyed queue's armed timer
// (key -1, never submitted again, and cancelled by `keyed-arm-cancel` too: a constant), and the keys that the re-submissions find pending.
switch workload {
case .queuePreempt, .queueThrottle:
  queue.delay(for: hour) {}
case .keyedArm, .keyedArmCancel:
  keyed.delay(-1, for: hour)
case .keyedResubmit, .keyedThrottleResubmit:
  for key in 0..<Workload.resubmittedKeys { keyed.delay(key, for: hour) }
case .lastWins10, .append10, .lastWins10k, .append10k:
  values.delay(-1, for: hour, value: [])
case .actorArm, .actorResubmit, .actorPreempt, .streamDebounced, .streamThrottled:
  break
}

/// The measured loop: never inlined, so that it is a function of its own for callgrind.
@inline(never)
func measuredLoop(
  _ workload: Workload, calls: Int, queue: DelayedPreemptiveDispatchQueue,
  keyed: KeyedDelayedPreemptiveDispatchQueue<Int, Void>,
  values: KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>
) {
  let hour = Duration.seconds(3_600)
  let task: @Sendable () -> Void = {}
  switch workload {
  case .queuePreempt, .queueThrottle:
    for _ in 0..<calls { queue.delay(for: hour, task: task) }
  case .keyedArm:
    for key in 0..<calls { keyed.delay(key, for: hour) }
  case .keyedArmCancel:
    for key in 0..<calls { keyed.delay(key, for: hour) }
    keyed.cancelAll()
  case .keyedResubmit, .keyedThrottleResubmit:
    var key = 0
    for _ in 0..<calls {
      keyed.delay(key, for: hour)
      key += 1
      if key == Workload.resubmittedKeys { key = 0 }
    }
  case .lastWins10, .append10, .lastWins10k, .append10k:
    let burst = workload.burst!
    for call in 0..<calls { values.delay(call / burst, for: hour, value: [call]) }
  case .actorArm, .actorResubmit, .actorPreempt, .streamDebounced, .streamThrottled:
    break
  }
}

/// The actors' measured loop, awaiting each call from the task that runs it.
@Sendable @inline(never)
func measuredLoopOnActor(
  _ workload: Workload, calls: Int, actor: KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock>,
  single: DelayedPreemptiveActor<ContinuousClock>
) async {
  let hour = Duration.seconds(3_600)
  let task: @Sendable () async -> Void = {}
  switch workload {
  case .actorPreempt:
    for _ in 0..<calls { await single.delay(hour, task: task) }
  case .actorArm:
    for key in 0..<calls { await actor.delay(key, for: hour) }
  case .actorResubmit:
    var key = 0
    for _ in 0..<calls {
      await actor.delay(key, for: hour)
      key += 1
      if key == Workload.resubmittedKeys { key = 0 }
    }
  default:
    break
  }
}

/// `0..<count` as an `AsyncSequence` that never suspends, as swift-async-algorithms'
/// `(0..<count).async` in the stream benchmarks.
struct NeverSuspending: AsyncSequence, Sendable {
  let count: Int

  struct AsyncIterator: AsyncIteratorProtocol {
    var next = 0
    let count: Int

    mutating func next() async -> Int? {
      guard next < count else { return nil }
      defer { next += 1 }
      return next
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

/// The stream workloads' measured loop: `calls` elements through the operator, consumed in the
/// task that runs it. The timer is an hour away, so the base's end emits the last element.
@Sendable @inline(never)
func measuredLoopOnStream(_ workload: Workload, calls: Int) async {
  let hour = Duration.seconds(3_600)
  let base = NeverSuspending(count: calls)
  var last: Int?
  switch workload {
  case .streamDebounced:
    for await element in base.debounced(for: hour) { last = element }
  case .streamThrottled:
    for await element in base.throttled(for: hour) { last = element }
  default:
    break
  }
  precondition(last == calls - 1, "\(workload.rawValue) emitted \(String(describing: last)) last")
}

/// Runs `body` in a task of its own and blocks until it has returned, so that the top-level code
/// stays synchronous for the other workloads.
func runTask(_ body: @escaping @Sendable () async -> Void) {
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    await body()
    done.signal()
  }
  done.wait()
}

switch workload {
case .actorArm, .actorResubmit, .actorPreempt:
  // Set-up, not counted, in a task of its own: callgrind cannot follow the hops' tail calls, so
  // the measured loop runs alone in its task, with nothing after it (the process exits with the
  // keys pending).
  runTask { [actor, single, workload] in
    if workload == .actorPreempt {
      await single.delay(hour) {}
    } else if workload == .actorArm {
      await actor.delay(-1, for: hour)
    } else {
      for key in 0..<Workload.resubmittedKeys { await actor.delay(key, for: hour) }
    }
  }
  runTask { [actor, single, workload, calls] in
    await measuredLoopOnActor(workload, calls: calls, actor: actor, single: single)
  }
case .streamDebounced, .streamThrottled:
  runTask { [workload, calls] in await measuredLoopOnStream(workload, calls: calls) }
default:
  measuredLoop(workload, calls: calls, queue: queue, keyed: keyed, values: values)
}

queue.cancel()
keyed.cancelAll()
values.cancelAll()
print("\(workload.rawValue): \(calls) calls")
