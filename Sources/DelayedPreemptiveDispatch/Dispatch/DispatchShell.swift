import Dispatch

/// The working part of both GCD types, ``DelayedPreemptiveDispatchQueue`` (one line) and
/// ``KeyedDelayedPreemptiveDispatchQueue`` (a line per key): the ``BurstDriver`` under a lock,
/// the `DispatchGroup` that tracks the busy state, and the one timer.
///
/// It says only how its timer is delivered (on ``timerQueue``, or, on a clock with
/// `drainsOnFire`, in a task that waits for the runs the firing made due) and how a task runs
/// (a worker block on ``runQueue`` takes ready runs from the driver and runs them one after
/// another). With `runsWorkerInline`, a timer delivery runs the worker it starts right there, in
/// its own block: the single queue's due task runs in the timer's block, on its serial queue.
/// Timers capture the shell weakly, so a pending timer keeps nothing alive. Every transition
/// happens under the lock; its effects happen after.
@usableFromInline
final class DispatchShell<Lines: BurstLines>: TicketOwner {
  @usableFromInline typealias Driver = BurstDriver<Lines>
  @usableFromInline typealias LineID = Lines.LineID
  @usableFromInline typealias Work = Lines.Work

  /// How many due timers a delivery hands to their lines per hold of the lock.
  @usableFromInline static var dueChunk: Int { 4_096 }

  @usableFromInline
  struct State: Sendable {
    @usableFromInline var driver: Driver
    /// Timer deliveries on a clock, waiting for the runs decided so far to finish, so that a
    /// test clock's `advance` returns once the tasks it made due have returned.
    @usableFromInline var drainWaiters: [CheckedContinuation<Void, Never>] = []
  }

  @usableFromInline let runQueue: DispatchQueue
  @usableFromInline let timerQueue: DispatchQueue
  /// Entered when the instance becomes busy, left when it is idle again.
  @usableFromInline let group = DispatchGroup()
  @usableFromInline let timer: any BurstTimer
  @usableFromInline let drainsOnFire: Bool
  @usableFromInline let runsWorkerInline: Bool
  @usableFromInline let tolerance: Duration?
  @usableFromInline let task: @Sendable (LineID, Work) -> Void
  @usableFromInline let state: LockBox<State>
  /// `combine`, and the gate that keeps it from running concurrently: every call that can end
  /// a burst passes through the gate, so a burst's value, taken out of the driver for the
  /// merge, is back before anything can run or drop it. `combine` runs under the gate only,
  /// never under `state`'s lock, which workers need.
  @usableFromInline let combine: (@Sendable (inout Work, Work) -> Void)?
  @usableFromInline let gate: LockBox<Void>?

  @usableFromInline
  init(
    driver: Driver, runQueue: DispatchQueue, timerQueue: DispatchQueue, timer: any BurstTimer,
    drainsOnFire: Bool, runsWorkerInline: Bool, tolerance: Duration?,
    combine: (@Sendable (inout Work, Work) -> Void)? = nil,
    task: @escaping @Sendable (LineID, Work) -> Void
  ) {
    self.runQueue = runQueue
    self.timerQueue = timerQueue
    self.timer = timer
    self.drainsOnFire = drainsOnFire
    self.runsWorkerInline = runsWorkerInline
    self.tolerance = tolerance
    self.combine = combine
    gate = combine == nil ? nil : LockBox(())
    self.task = task
    state = LockBox(State(driver: driver))
  }

  // MARK: - Submissions

  @inlinable
  func delay(_ id: LineID, _ delay: RequestedDelay, work: Work?) -> DelayTicket {
    guard let combine, let work else { return submit(id, delay, work: work) }
    return gated {
      // The value taken out goes into the merge without a copy left behind, so that an
      // appending `combine` grows it in place. One reading of the clock for both: a burst that
      // is due keeps its value, and the submission ends it first (T7).
      let now = timer.now()
      let merged = Driver.merge(
        work, into: state.withLock { $0.driver.takeValueToCombine(id, at: now) }, with: combine)
      return submit(id, delay, work: merged, now: now)
    }
  }

  /// Runs `body` through the gate when the instance combines values, else at once.
  @inlinable
  func gated<Result>(_ body: () -> Result) -> Result {
    guard let gate else { return body() }
    return gate.withLock { _ in body() }
  }

  @inlinable @inline(__always)
  func submit(_ id: LineID, _ delay: RequestedDelay, work: Work?) -> DelayTicket {
    submit(id, delay, work: work, now: timer.now())
  }

  @inlinable @inline(__always)
  func submit(_ id: LineID, _ delay: RequestedDelay, work: Work?, now: TimelineInstant)
    -> DelayTicket
  {
    var effects = BurstEffects()
    let ticket = state.withLock { state in
      let ticket = state.driver.delay(
        id, delay, now: now, work: work, owner: self, effects: &effects)
      if effects.becameBusy { group.enter() }
      return ticket
    }
    perform(effects)
    if effects.workersToStart > 0 {
      timer.awaitOnClock { [weak self] in await self?.runsDrained() }
    }
    return ticket
  }

  @inlinable
  func cancel(_ id: LineID) { gated { perform(state.withLock { $0.driver.cancel(id) }) } }
  @inlinable
  func cancelAll() { gated { perform(state.withLock { $0.driver.cancelAll() }) } }
  @inlinable
  func flush(_ id: LineID) {
    gated {
      let now = timer.saturatingNow()
      perform(state.withLock { $0.driver.flush(id, at: now) })
    }
  }
  @inlinable
  func flushAll() {
    gated {
      let now = timer.saturatingNow()
      perform(state.withLock { $0.driver.flushAll(at: now) })
    }
  }
  /// The public type is going away: cancels every pending burst and forgets the tasks.
  @inlinable
  func release() { gated { perform(state.withLock { $0.driver.release() }) } }

  @inlinable
  func isPending(_ id: LineID) -> Bool { state.withLock { $0.driver.isPending(id) } }
  @inlinable var pendingCount: Int { state.withLock { $0.driver.pendingCount } }
  @inlinable var footprint: (lines: Int, timers: Int) {
    state.withLock { $0.driver.footprint }
  }

  // MARK: - Effects and workers

  /// Performs `effects` with the one interpreter: each worker is a block on ``runQueue``, or,
  /// with `inline`, the first one runs right here.
  @inlinable @inline(__always)
  func perform(_ effects: BurstEffects, inline: Bool = false) {
    effects.perform(
      startWorkers: { count in
        for index in 0..<count {
          if inline && index == 0 { work() } else { runQueue.async { self.work() } }
        }
      },
      arm: { arm($0) },
      install: { handle, generation in
        state.withLock { $0.driver.install(handle, generation: generation) }
      }, becameIdle: { group.leave() })
  }

  /// A worker: runs batches of ready runs until the driver has none left.
  @inlinable
  func work() {
    var finished: [LineID] = []
    while true {
      let (runs, effects, drained) = state.withLock { state in
        let (runs, effects) = state.driver.nextRuns(finishing: finished)
        let drained = state.driver.unfinishedRuns == 0 ? state.drainWaiters.take() : []
        return (runs, effects, drained)
      }
      for waiter in drained { waiter.resume() }
      perform(effects)
      guard !runs.isEmpty else { return }
      finished.removeAll(keepingCapacity: true)
      WorkerMark.mark(self)
      for (id, run) in runs {
        task(id, run.work)
        run.resolve()
        finished.append(id)
      }
      WorkerMark.mark(nil)
    }
  }

  // MARK: - The timer

  @inlinable
  func timerFired(generation: UInt64) {
    gated { timerFiredUngated(generation: generation) }
  }

  @inlinable
  func timerFiredUngated(generation: UInt64) {
    let now = timer.now()
    // Due bursts end in chunks, with the lock released in between, so that workers start on
    // the first runs while later ones are still being decided.
    var effects = state.withLock {
      $0.driver.timerFired(at: now, generation: generation, limit: Self.dueChunk)
    }
    while effects.moreDue {
      perform(effects)
      effects = state.withLock { $0.driver.popDue(at: now, limit: Self.dueChunk) }
    }
    perform(effects, inline: runsWorkerInline)
  }

  /// On a clock: fires, then returns once every run decided so far has returned.
  @inlinable
  func timerFiredAndDrained(generation: UInt64) async {
    timerFired(generation: generation)
    await runsDrained()
  }

  /// Returns once every run decided so far has returned.
  @usableFromInline
  func runsDrained() async {
    await withCheckedContinuation { continuation in
      let drained = state.withLock { state in
        if state.driver.unfinishedRuns > 0 { state.drainWaiters.append(continuation) }
        return state.driver.unfinishedRuns == 0
      }
      if drained { continuation.resume() }
    }
  }

  /// Arms the timer for `request`, delivering on the timer queue (or, on a clock with
  /// `drainsOnFire`, in a task that waits for the runs it made due), holding the shell weakly.
  @inlinable
  func arm(_ request: TimerRequest) -> TimerHandle {
    let generation = request.generation
    let delivery: TimerDelivery =
      drainsOnFire
      ? .task { [weak self] in await self?.timerFiredAndDrained(generation: generation) }
      : .queue(timerQueue) { [weak self] in self?.timerFired(generation: generation) }
    return timer.arm(at: request.deadline, tolerance: tolerance, delivery: delivery)
  }

  func synchronize(_ record: BurstRecord) async {
    state.withLock { $0.driver.synchronize(record) }
    record.resumeResolved()
  }
}
