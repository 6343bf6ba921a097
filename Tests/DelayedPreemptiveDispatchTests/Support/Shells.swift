import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch

/// The four shells that share the single-burst rules, for suites parameterised over them: the
/// queue, the actor, and their keyed forms driven with one key.
enum ShellKind: String, CaseIterable, Sendable, CustomStringConvertible {
  case queue
  case actor
  case keyedQueue
  case keyedActor

  var description: String { rawValue }

  /// The shells whose `delay` may omit the task, reusing the one given last.
  static var single: [ShellKind] { [.queue, .actor] }

  /// The shells whose tasks run in Swift concurrency.
  static var actors: [ShellKind] { [.actor, .keyedActor] }

  /// Makes the shell on `clock` (a `ManualClock`, or a test clock of a suite's own); every task
  /// it runs appends its name to `ran`.
  func make<C: Clock>(
    clock: C, options: DelayOptions = DelayOptions(), cancelsRunningTask: Bool = false,
    initialTask: String? = nil, ran: Recorder<String>,
    body: (@Sendable (String) async -> Void)? = nil
  ) -> Shell where C.Duration == Duration {
    let run: @Sendable (String) async -> Void = { name in
      if let body { await body(name) } else { ran.append(name) }
    }
    let syncTask: @Sendable (String) -> @Sendable () -> Void = { name in { ran.append(name) } }
    let asyncTask: @Sendable (String) -> @Sendable () async -> Void = { name in { await run(name) }
    }
    switch self {
    case .queue:
      let queue = DelayedPreemptiveDispatchQueue(
        clock: clock, options: options,
        task: initialTask.map(syncTask))
      return Shell(
        kind: self,
        delay: { duration, name in
          queue.delay(for: duration, task: name.map(syncTask))
        },
        cancel: { queue.cancel() }, flush: { queue.flush() }, isPending: { queue.isPending },
        wait: { await Self.settle { queue.wait(timeout: $0) } })
    case .actor:
      let actor = DelayedPreemptiveActor(
        clock: clock, options: options, cancelsRunningTask: cancelsRunningTask,
        task: initialTask.map(asyncTask))
      return Shell(
        kind: self,
        delay: { duration, name in
          await actor.delay(duration, task: name.map(asyncTask))
        },
        cancel: { await actor.cancel() }, flush: { await actor.flush() },
        isPending: { await actor.isPending }, wait: { await actor.wait() })
    case .keyedQueue:
      let keyed = KeyedDelayedPreemptiveDispatchQueue<Int, String>(clock: clock, options: options) {
        _, name in ran.append(name)
      }
      return Shell(
        kind: self,
        delay: { duration, name in keyed.delay(0, for: duration, value: name ?? initialTask ?? "")
        },
        cancel: { keyed.cancel(0) }, flush: { keyed.flush(0) }, isPending: { keyed.isPending(0) },
        wait: { await Self.settle { keyed.wait(timeout: $0) } })
    case .keyedActor:
      let keyed = KeyedDelayedPreemptiveActor<Int, String, C>(
        clock: clock, options: options, cancelsRunningTask: cancelsRunningTask
      ) { _, name in await run(name) }
      return Shell(
        kind: self,
        delay: { duration, name in
          await keyed.delay(0, for: duration, value: name ?? initialTask ?? "")
        },
        cancel: { await keyed.cancel(0) }, flush: { await keyed.flush(0) },
        isPending: { await keyed.isPending(0) }, wait: { await keyed.wait() })
    }
  }

  /// Waits for a GCD shell to become idle on a thread of its own, so that the blocking wait
  /// holds no thread of the cooperative pool.
  private static func settle(
    _ wait: @escaping @Sendable (DispatchTime) -> DispatchTimeoutResult
  ) async {
    await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        _ = wait(.now() + 30)
        continuation.resume()
      }
    }
  }
}

/// One shell behind one interface; every call is awaited, whether the shell is synchronous.
struct Shell: Sendable {
  let kind: ShellKind
  private let submit: @Sendable (Duration, String?) async -> DelayTicket
  private let cancelBody: @Sendable () async -> Void
  private let flushBody: @Sendable () async -> Void
  private let isPendingBody: @Sendable () async -> Bool
  private let waitBody: @Sendable () async -> Void

  init(
    kind: ShellKind, delay: @escaping @Sendable (Duration, String?) async -> DelayTicket,
    cancel: @escaping @Sendable () async -> Void, flush: @escaping @Sendable () async -> Void,
    isPending: @escaping @Sendable () async -> Bool, wait: @escaping @Sendable () async -> Void
  ) {
    self.kind = kind
    submit = delay
    cancelBody = cancel
    flushBody = flush
    isPendingBody = isPending
    waitBody = wait
  }

  /// Submits the task named `name`, or the one given last when `nil` (single shells only).
  @discardableResult
  func delay(_ duration: Duration, _ name: String? = nil) async -> DelayTicket {
    await submit(duration, name)
  }

  func cancel() async { await cancelBody() }

  /// Runs the pending task now; returns once it has finished.
  func flush() async {
    await flushBody()
    if kind == .queue || kind == .keyedQueue { await wait() }
  }

  var isPending: Bool { get async { await isPendingBody() } }

  /// Returns once nothing is pending or running.
  func wait() async { await waitBody() }
}
