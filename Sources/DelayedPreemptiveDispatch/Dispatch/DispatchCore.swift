import Dispatch

/// The working part of a ``DelayedPreemptiveDispatchQueue``: a ``BurstDriver`` under a lock, the
/// serial queue tasks run on, the `DispatchGroup` that tracks the busy state, and the timer.
///
/// It says only how to arm (on ``BurstTimer``, delivering on the serial queue) and how to run
/// (one block, or the timer's own block, per decided run; each block runs the oldest decided
/// run). Timers capture the core weakly and never the public queue, so a pending timer keeps
/// nothing alive. Every transition happens under the lock; its effects happen after.
final class DispatchCore: TicketOwner {
  typealias Driver = BurstDriver<SyncWork>

  let queue: DispatchQueue
  /// Entered when the core becomes busy (a burst pending or a run not finished), left when it
  /// becomes idle again; ``DelayedPreemptiveDispatchQueue/wait(timeout:)`` waits on it.
  let group = DispatchGroup()
  private let timer: any BurstTimer
  private let tolerance: Duration?
  /// The queue targets `.main`: waiting for it on the main queue would never return.
  private let targetsMain: Bool
  private let state: LockBox<Driver>

  init(
    queue: DispatchQueue, target: DispatchQueue? = nil, timer: any BurstTimer,
    options: DelayOptions,
    work: (@Sendable () -> Void)?
  ) {
    self.queue = queue
    self.timer = timer
    targetsMain = target.map(QueueIdentity.isMainQueue) ?? false
    tolerance = options.tolerance
    state = LockBox(Driver(options: options, work: work.map(SyncWork.init)))
    queue.setSpecific(key: QueueIdentity.key, value: ObjectIdentifier(self))
  }

  var isPending: Bool { state.withLock { $0.isPending } }

  /// Blocks until idle or `timeout`; stops with a message where waiting would wait for itself.
  func wait(timeout: DispatchTime) -> DispatchTimeoutResult {
    requireArgument(
      DispatchQueue.getSpecific(key: QueueIdentity.key) != ObjectIdentifier(self),
      "wait(timeout:) was called from a task of the same queue, which would wait for itself; "
        + "call it from outside the queue, or use flush() alone inside a task")
    if group.wait(timeout: .now()) == .success { return .success }
    requireArgument(
      !(targetsMain && QueueIdentity.isOnMainQueue),
      "wait(timeout:) was called on the main queue for a queue whose target is .main while it "
        + "is busy: its tasks could never run; wait from another thread or do not block main")
    return group.wait(timeout: timeout)
  }

  func delay(_ delay: RequestedDelay, work: (@Sendable () -> Void)?) -> DelayTicket {
    let now = timer.now()
    var effects = BurstEffects()
    let ticket = state.withLock { driver in
      let ticket = driver.delay(
        delay, now: now, work: work.map(SyncWork.init), owner: self, effects: &effects)
      if effects.becameBusy { group.enter() }
      return ticket
    }
    perform(effects)
    return ticket
  }

  func flush() {
    perform(state.withLock { $0.flush() })
  }

  func cancel() {
    perform(state.withLock { $0.cancel() })
  }

  /// Cancels the pending burst and drops the task: the public queue is going away.
  func release() {
    perform(state.withLock { $0.release() })
  }

  /// Performs `effects` with the one interpreter: each decided run is a block on the queue,
  /// or, with `inline`, the first one runs right here (the timer's block, on the queue).
  @inline(__always)
  private func perform(_ effects: BurstEffects, inline: Bool = false) {
    effects.perform(
      start: { count in
        for index in 0..<count {
          if inline && index == 0 { runNext() } else { queue.async { self.runNext() } }
        }
      },
      arm: { arm($0) }, becameIdle: { group.leave() })
  }

  /// Runs the oldest decided run: blocks may execute in another order than the runs were
  /// decided (a timer block queued early), but the runs they execute never do.
  private func runNext() {
    let run = state.withLock { $0.takeRun() }
    run.work.run()
    run.resolve()
    if state.withLock({ $0.runFinished() }) { group.leave() }
  }

  /// Runs on `queue` when the timer named `generation` fires.
  private func timerFired(generation: UInt64) {
    let now = timer.now()
    perform(state.withLock { $0.timerFired(at: now, generation: generation) }, inline: true)
  }

  /// Delivers on the serial queue, holding the core weakly.
  private func arm(_ request: TimerRequest) {
    let generation = request.generation
    timer.arm(
      request, tolerance: tolerance,
      delivery: .queue(queue) { [weak self] in self?.timerFired(generation: generation) },
      install: { handle, generation in state.withLock { $0.install(handle, generation: generation) }
      })
  }

  func synchronize(_ record: BurstRecord) async {
    state.withLock { $0.synchronize(record) }
    record.resumeResolved()
  }
}
