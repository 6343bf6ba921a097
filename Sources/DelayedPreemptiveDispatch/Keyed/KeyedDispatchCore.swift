import Dispatch

/// The working part of a ``KeyedDelayedPreemptiveDispatchQueue``: a ``KeyedBurstDriver`` under a
/// lock, the one timer (its deliveries only decide, on a small serial queue), and worker blocks
/// on the target that run due tasks in batches.
///
/// It says only how to arm (``BurstTimer``) and how to run (a worker block takes a batch of due
/// runs from the driver, runs them one after another, and reports them finished as it takes
/// the next batch). Timers capture the core weakly, so a pending timer keeps nothing alive.
@usableFromInline
final class KeyedDispatchCore<Key: Hashable & Sendable, Value: Sendable>: TicketOwner {
  @usableFromInline typealias Driver = KeyedBurstDriver<Key, Value>

  /// How many due heap entries a timer delivery handles per hold of the lock.
  @usableFromInline static var dueChunk: Int { 4_096 }

  @usableFromInline
  struct State {
    @usableFromInline var driver: Driver
    /// Timer deliveries on a clock, waiting for the runs decided so far to finish, so that a
    /// test clock's `advance` returns once the tasks it made due have returned.
    @usableFromInline var drainWaiters: [CheckedContinuation<Void, Never>] = []
  }

  @usableFromInline let timerQueue: DispatchQueue
  @usableFromInline let runQueue: DispatchQueue
  /// Entered when the instance becomes busy, left when it is idle again.
  @usableFromInline let group = DispatchGroup()
  @usableFromInline let timer: any BurstTimer
  @usableFromInline let drainsOnFire: Bool
  @usableFromInline let tolerance: Duration?
  @usableFromInline let task: @Sendable (Key, Value) -> Void
  @usableFromInline let state: LockBox<State>
  /// `combine`, and the gate that keeps it from running concurrently: every call that can end
  /// a burst passes through the gate, so a burst's value, taken out of the driver for the
  /// merge, is back before anything can run or drop it. `combine` runs under the gate only,
  /// never under `state`'s lock, which workers need.
  @usableFromInline let combine: (@Sendable (inout Value, Value) -> Void)?
  @usableFromInline let gate: LockBox<Void>?

  @usableFromInline
  init(
    label: String, qos: DispatchQoS, target: DispatchQueue?, timer: any BurstTimer,
    drainsOnFire: Bool, options: DelayOptions, maxConcurrentTasks: Int?,
    combine: (@Sendable (inout Value, Value) -> Void)? = nil,
    task: @escaping @Sendable (Key, Value) -> Void
  ) {
    self.combine = combine
    gate = combine == nil ? nil : LockBox(())
    runQueue = target ?? globalQueue(qos: qos)
    timerQueue = DispatchQueue(label: label, qos: qos, target: runQueue)
    self.timer = timer
    self.drainsOnFire = drainsOnFire
    tolerance = options.tolerance
    self.task = task
    state = LockBox(
      State(
        driver: Driver(
          options: options, maxConcurrentTasks: maxConcurrentTasks,
          keepsEveryValue: combine != nil, instance: "KeyedDelayedPreemptiveDispatchQueue")))
  }

  @inlinable
  func delay(_ key: Key, _ delay: RequestedDelay, value: Value) -> DelayTicket {
    guard let combine else { return submit(key, delay, value: value) }
    return gated {
      guard var merged = state.withLock({ $0.driver.takeValueToCombine(key) }) else {
        return submit(key, delay, value: value)
      }
      combine(&merged, value)
      return submit(key, delay, value: merged)
    }
  }

  /// Runs `body` through the gate when the instance combines values, else at once.
  @inlinable
  func gated<Result>(_ body: () -> Result) -> Result {
    guard let gate else { return body() }
    return gate.withLock { _ in body() }
  }

  @inlinable
  func submit(_ key: Key, _ delay: RequestedDelay, value: Value) -> DelayTicket {
    let now = timer.now()
    var effects = BurstEffects()
    let ticket = state.withLock { state in
      let ticket = state.driver.delay(
        key, delay, now: now, value: value, owner: self, effects: &effects)
      if effects.becameBusy { group.enter() }
      return ticket
    }
    perform(effects)
    return ticket
  }

  /// Blocks until idle or `timeout`; stops with a message when called from one of this
  /// instance's own tasks, which would wait for itself.
  func wait(timeout: DispatchTime) -> DispatchTimeoutResult {
    requireArgument(
      !WorkerThread.isRunning(self),
      "wait(timeout:) was called from a task of the same keyed queue, which would wait for "
        + "itself; call it from outside the queue")
    return group.wait(timeout: timeout)
  }

  @inlinable
  func cancel(_ key: Key) { gated { perform(state.withLock { $0.driver.cancel(key) }) } }
  @inlinable
  func cancelAll() { gated { perform(state.withLock { $0.driver.cancelAll() }) } }
  @inlinable
  func flush(_ key: Key) { gated { perform(state.withLock { $0.driver.flush(key) }) } }
  @inlinable
  func flushAll() { gated { perform(state.withLock { $0.driver.flushAll() }) } }
  @inlinable
  func release() { gated { perform(state.withLock { $0.driver.release() }) } }

  @inlinable
  func isPending(_ key: Key) -> Bool { state.withLock { $0.driver.isPending(key) } }
  @inlinable var pendingCount: Int { state.withLock { $0.driver.pendingCount } }
  @inlinable var footprint: (keys: Int, timers: Int) { state.withLock { $0.driver.footprint } }

  /// Performs `effects` with the one interpreter: each start is a worker block on the target.
  @inlinable @inline(__always)
  func perform(_ effects: BurstEffects) {
    effects.perform(
      start: { count in for _ in 0..<count { runQueue.async { self.work() } } },
      arm: { arm($0) }, becameIdle: { group.leave() })
  }

  /// A worker: runs batches of due runs until the driver has none left.
  @inlinable
  func work() {
    var finished: [Key] = []
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
      WorkerThread.mark(self)
      for (key, run) in runs {
        task(key, run.work)
        run.resolve()
        finished.append(key)
      }
      WorkerThread.mark(nil)
    }
  }

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
    perform(effects)
  }

  /// On a clock: fires, then returns once every run decided so far has returned.
  @inlinable
  func timerFiredAndDrained(generation: UInt64) async {
    timerFired(generation: generation)
    await withCheckedContinuation { continuation in
      let drained = state.withLock { state in
        if state.driver.unfinishedRuns > 0 { state.drainWaiters.append(continuation) }
        return state.driver.unfinishedRuns == 0
      }
      if drained { continuation.resume() }
    }
  }

  /// Delivers on the timer queue (or, on a clock, in a task that waits for the runs it made
  /// due), holding the core weakly.
  @inlinable
  func arm(_ request: TimerRequest) {
    let generation = request.generation
    let delivery: TimerDelivery =
      drainsOnFire
      ? .task { [weak self] in await self?.timerFiredAndDrained(generation: generation) }
      : .queue(timerQueue) { [weak self] in self?.timerFired(generation: generation) }
    timer.arm(
      request, tolerance: tolerance, delivery: delivery,
      install: { handle, generation in
        state.withLock { $0.driver.install(handle, generation: generation) }
      })
  }

  func synchronize(_ record: BurstRecord) async {}
}
