/// Debounces per key in Swift concurrency: the parallel of ``KeyedDelayedPreemptiveDispatchQueue``,
/// with the same rules, generic over its clock.
///
/// ```swift
/// let digests = KeyedDelayedPreemptiveActor<UserID, Void, ContinuousClock>(
///   maxConcurrentTasks: 8
/// ) { user, _ in
///   await mailer.sendDigest(to: user)     // once a user's activity has been quiet for a minute
/// }
/// await digests.delay(user, for: .seconds(60))
/// // When the service stops:
/// await digests.flushAll()
/// await digests.wait()
/// ```
///
/// - Per key: the rules of ``DelayedPreemptiveActor`` with the instance's `options`; a
///   submission for one key never affects another. The task receives the key and the value of
///   its burst's last submission.
/// - Where tasks run: in unstructured tasks, off the actor. Tasks of one key never overlap;
///   tasks of different keys may run at the same time, at most `maxConcurrentTasks` at once
///   when it is given (otherwise at most 64 worker tasks), oldest deadline first. Workers take
///   due tasks in batches when many are due, so that a million due keys cost a few thousand
///   actor hops rather than a million. A task may call any method on its own instance.
/// - Timers: one sleeping task (or one ``SchedulingClock`` callback) for the whole instance.
///   With `ManualClock`, `advance` returns once the tasks it made due have returned.
/// - Memory: an idle key holds nothing. The timer holds the actor weakly; releasing the last
///   reference cancels every pending burst, and tasks already running finish.
///
/// `delay`, the timer's firing and the workers' taking of due runs are `@inlinable`, as the keyed
/// queue's are: a client compiles them for its own `Key`, `Value` and clock, so that a
/// submission looks up no generic metadata. Only arming the timer stays generic (once per new
/// earliest deadline, not per call).
public final actor KeyedDelayedPreemptiveActor<Key: Hashable & Sendable, Value: Sendable, C: Clock>
where C.Duration == Duration {
  @usableFromInline typealias Driver = KeyedBurstDriver<Key, Value>
  @usableFromInline typealias Run = DecidedRun<Value>
  @usableFromInline typealias Waiter = (
    condition: Condition, continuation: CheckedContinuation<Void, Never>
  )

  // What the `@inlinable` paths touch is `@usableFromInline` (an actor's stored properties
  // included); the timer, read and armed through non-inlinable entry points, is not.
  let timer: ClockTimer<C>
  /// `timer`'s time line, copied out of it, so that ``now()`` reads the same ticks inline.
  @usableFromInline let timeline: ClockTimeline<C>
  let tolerance: Duration?
  @usableFromInline let task: @Sendable (Key, Value) async -> Void
  /// `combine`, run in the actor's isolation: never concurrently, and under no lock.
  @usableFromInline let combine: (@Sendable (inout Value, Value) -> Void)?
  @usableFromInline var driver: Driver
  /// With `cancelsRunningTask`: each key's run taken by a worker, to cancel on a new burst.
  @usableFromInline let running: LockBox<[Key: RunningRun]>?
  /// Callers of `flush`, `flushAll`, `wait` and timer deliveries, with what they wait for.
  @usableFromInline var waiters: [Waiter] = []

  @usableFromInline
  enum Condition {
    /// No run of the key decided or running.
    case keyQuiet(Key)
    /// No run decided or running, any key.
    case runsDrained
    /// Nothing pending or running.
    case idle
  }

  /// Creates a keyed actor whose timer sleeps on `clock`.
  ///
  /// - Precondition: `maxConcurrentTasks`, when given, is at least 1.
  public init(
    clock: C, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsRunningTask: false, task: task)
  }

  /// Creates a keyed actor that can cancel a key's stale running task: with
  /// `cancelsRunningTask`, a submission that starts a new burst of a key makes every unfinished
  /// run of that key's earlier bursts stale, the rule of
  /// ``DelayedPreemptiveActor/init(clock:options:cancelsRunningTask:task:)``: the key's running
  /// task is cancelled (through Swift task cancellation, cooperatively), and a run of the key
  /// still queued behind it starts in a cancelled task. Other keys are not affected, and tasks
  /// of one key still never overlap.
  public init(
    clock: C, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    cancelsRunningTask: Bool, task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsRunningTask: cancelsRunningTask, combine: nil, task: task)
  }

  /// Creates a keyed actor whose bursts keep every value: a burst's value starts as its first
  /// submission's, and `combine` merges every later submission of the burst into it, in order.
  /// The rules are those of
  /// ``KeyedDelayedPreemptiveDispatchQueue/init(label:qos:target:options:maxConcurrentTasks:combine:task:)``;
  /// `combine` runs in the actor's isolation, inside `delay`.
  public init(
    clock: C, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    combine: @escaping @Sendable (_ value: inout Value, _ next: Value) -> Void,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsRunningTask: false, combine: combine, task: task)
  }

  private init(
    clock: C, options: DelayOptions, maxConcurrentTasks: Int?, cancelsRunningTask: Bool,
    combine: (@Sendable (inout Value, Value) -> Void)?,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.combine = combine
    let timer = ClockTimer(clock: clock)
    self.timer = timer
    timeline = timer.timeline
    tolerance = options.tolerance
    self.task = task
    driver = Driver(
      options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsStaleRuns: cancelsRunningTask, keepsEveryValue: combine != nil,
      instance: "KeyedDelayedPreemptiveActor")
    running = cancelsRunningTask ? LockBox([:]) : nil
  }

  deinit {
    driver.release().performRelease()
  }

  /// Submits `value` for `key`, to run `duration` from now, preempting the key's pending
  /// submission. Zero or negative means "due now".
  @inlinable
  @discardableResult
  public func delay(_ key: Key, for duration: Duration, value: Value) -> DelayTicket {
    var value = value
    if let combine, var merged = driver.takeValueToCombine(key) {
      combine(&merged, value)
      swap(&value, &merged)
    }
    var effects = BurstEffects()
    let ticket = driver.delay(
      key, .duration(duration), now: now(), value: value, owner: self, effects: &effects)
    if effects.startedBurst && driver.cancelsStaleRuns { makeRunsStale(of: key) }
    perform(effects)
    return ticket
  }

  /// The time on `timer`'s time line, read inline (``ClockTimeline/now()`` is inlinable), so
  /// that a specialised submission reads its clock without generic calls.
  @inlinable
  func now() -> Tick {
    timeline.now()
  }

  /// With `cancelsRunningTask`, a new burst of `key` started: the key's running task is
  /// cancelled, and a run a worker has taken but not yet started will start cancelled.
  @usableFromInline
  func makeRunsStale(of key: Key) {
    running?.withLock { runs in
      switch runs[key] {
      case .running(let task): task.cancel()
      case .starting: runs[key] = .starting(stale: true)
      case nil: break
      }
    }
  }

  /// Ends the key's pending burst without running it; a task that already started runs on.
  public func cancel(_ key: Key) {
    perform(driver.cancel(key))
  }

  /// Cancels every key's pending burst.
  public func cancelAll() {
    perform(driver.cancelAll())
  }

  /// Runs the key's pending task now and returns once it has finished; does nothing when the
  /// key is idle. Called from inside one of this actor's tasks, it returns at once.
  public func flush(_ key: Key) async {
    perform(driver.flush(key))
    guard !ActorRuns.isCurrentRun(of: ObjectIdentifier(self)) else { return }
    await wait(until: .keyQuiet(key))
  }

  /// Runs every pending task now and returns once all of them have finished. Called from
  /// inside one of this actor's tasks, it returns at once.
  public func flushAll() async {
    perform(driver.flushAll())
    guard !ActorRuns.isCurrentRun(of: ObjectIdentifier(self)) else { return }
    await wait(until: .runsDrained)
  }

  /// Whether the key has a pending burst (a running task does not count).
  public func isPending(_ key: Key) -> Bool {
    driver.isPending(key)
  }

  /// The number of keys with a pending burst.
  public var pendingCount: Int {
    driver.pendingCount
  }

  /// Returns once no key has a pending burst and no task is running. Graceful shutdown is
  /// `await flushAll()` then `await wait()`.
  public func wait() async {
    await wait(until: .idle)
  }

  /// Keys that hold state, and entries in the timer heap; for tests.
  var footprint: (keys: Int, timers: Int) { driver.footprint }

  private func holds(_ condition: Condition) -> Bool {
    switch condition {
    case .keyQuiet(let key): return !driver.hasRuns(key)
    case .runsDrained: return driver.unfinishedRuns == 0
    case .idle: return driver.outstanding == 0
    }
  }

  @usableFromInline
  func wait(until condition: Condition) async {
    guard !holds(condition) else { return }
    await withCheckedContinuation { waiters.append((condition, $0)) }
  }

  /// Resumes the waiters whose condition holds now; called with some waiting.
  @usableFromInline
  func resumeWaiters() {
    var waiting: [Waiter] = []
    for waiter in waiters {
      if holds(waiter.condition) { waiter.continuation.resume() } else { waiting.append(waiter) }
    }
    waiters = waiting
  }

  /// Performs `effects` with the one interpreter: each start is a worker task. Waiters for a
  /// key or for the runs are checked after every event, not only once idle.
  @inlinable
  func perform(_ effects: BurstEffects) {
    effects.perform(
      start: { count in for _ in 0..<count { startWorker() } }, arm: { armTimer($0) },
      becameIdle: {})
    if !waiters.isEmpty { resumeWaiters() }
  }

  /// Arms the one timer for `request`, delivering to ``timerFired(generation:)`` in a task that
  /// holds the actor weakly: ``ActorShell/arm(_:)``, with the delivery made here, so that in a
  /// client the firing, and the workers it starts, are specialised as `delay` is.
  @inlinable
  func armTimer(_ request: TimerRequest) {
    let generation = request.generation
    arm(request, delivery: .task { [weak self] in await self?.timerFired(generation: generation) })
  }

  /// Arms `request` on the timer with the one arming step of every shell
  /// (``BurstTimer/arm(_:tolerance:delivery:install:)``); not inlinable, as the timer is generic
  /// code, and called only when the earliest deadline moves earlier.
  @usableFromInline
  func arm(_ request: TimerRequest, delivery: TimerDelivery) {
    timer.arm(
      request, tolerance: tolerance, delivery: delivery,
      install: { install($0, generation: $1) })
  }

  /// Called by a worker: reports `finished` runs and takes the next batch.
  @inlinable
  func nextRuns(finishing finished: [Key]) -> [(Key, Run)] {
    let (runs, effects) = driver.nextRuns(finishing: finished)
    if driver.cancelsStaleRuns && !runs.isEmpty { registerTaken(runs) }
    perform(effects)
    return runs
  }

  /// With `cancelsRunningTask`: the taken `runs` are starting, stale when a newer burst of
  /// their key started before they were taken.
  @usableFromInline
  func registerTaken(_ runs: [(Key, Run)]) {
    running?.withLock { taken in
      for (key, run) in runs { taken[key] = .starting(stale: run.isStale) }
    }
  }

  /// Starts a worker task: it takes batches of due runs and runs them one after another, holding
  /// the actor weakly between batches, until none is left.
  @inlinable
  func startWorker() {
    let owner = ObjectIdentifier(self)
    let (task, running) = (self.task, self.running)
    Task { [weak self] in
      var finished: [Key] = []
      while let runs = await self?.nextRuns(finishing: finished), !runs.isEmpty {
        finished.removeAll(keepingCapacity: true)
        for (key, run) in runs {
          await Self.execute(run, for: key, task: task, running: running, owner: owner)
          run.resolve()
          finished.append(key)
        }
      }
    }
  }

  /// Runs `run`'s task; with `cancelsRunningTask`, in a child task that a newer burst of the
  /// key cancels, or that starts cancelled when a newer burst made the run stale before it
  /// started.
  @usableFromInline
  static func execute(
    _ run: Run, for key: Key, task: @escaping @Sendable (Key, Value) async -> Void,
    running: LockBox<[Key: RunningRun]>?, owner: ObjectIdentifier
  ) async {
    let value = run.work
    guard let running else {
      let current = RunningOwner(owner: owner, task: RunningOwner.currentTask())
      await RunningOwner.$current.withValue(current) { await task(key, value) }
      return
    }
    let child = Task {
      // Stale before it starts: it starts cancelled, before the user's task sees anything.
      if running.withLock({ $0[key]?.isStale ?? false }) { withUnsafeCurrentTask { $0?.cancel() } }
      let current = RunningOwner(owner: owner, task: RunningOwner.currentTask())
      await RunningOwner.$current.withValue(current) { await task(key, value) }
    }
    running.withLock { runs in
      // Made stale after the child looked: it is the running task, and is cancelled as such.
      if runs[key]?.isStale ?? false { child.cancel() }
      runs[key] = .running(child)
    }
    await child.value
    running.withLock { $0[key] = nil }
  }

  @inlinable
  func timerFired(generation: UInt64) async {
    perform(driver.timerFired(at: now(), generation: generation))
    await wait(until: .runsDrained)
  }

  func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    driver.install(handle, generation: generation)
  }
}

/// With `cancelsRunningTask`: a key's run from the moment a worker takes it.
@usableFromInline
enum RunningRun: Sendable {
  /// Taken, its task not yet registered; `stale` once a newer burst of the key started.
  case starting(stale: Bool)
  case running(Task<Void, Never>)

  var isStale: Bool {
    if case .starting(stale: true) = self { return true }
    return false
  }
}

extension KeyedDelayedPreemptiveActor where C == ContinuousClock {
  /// Creates a keyed actor that keeps every value of a burst with `combine`, whose timer
  /// follows real time on `ContinuousClock`.
  public init(
    options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    combine: @escaping @Sendable (_ value: inout Value, _ next: Value) -> Void,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: ContinuousClock(), options: options, maxConcurrentTasks: maxConcurrentTasks,
      combine: combine, task: task)
  }

  /// Creates a keyed actor whose timer follows real time on `ContinuousClock`.
  public init(
    options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: ContinuousClock(), options: options, maxConcurrentTasks: maxConcurrentTasks,
      task: task)
  }
}

extension KeyedDelayedPreemptiveActor where Value == Void {
  /// Submits `key` to run `duration` from now; for keys that say it all.
  @inlinable
  @discardableResult
  public func delay(_ key: Key, for duration: Duration) -> DelayTicket {
    delay(key, for: duration, value: ())
  }
}

extension KeyedDelayedPreemptiveActor: ActorShell {}

extension KeyedDelayedPreemptiveActor: TicketOwner {
  /// Keyed tickets learn every preemption as it happens; nothing to bring up to date.
  func synchronize(_ record: BurstRecord) async {}
}
