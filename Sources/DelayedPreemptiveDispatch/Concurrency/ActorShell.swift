/// What the two actors, ``DelayedPreemptiveActor`` (one line) and
/// ``KeyedDelayedPreemptiveActor`` (a line per key), are made of: the ``BurstDriver`` in their
/// isolation, their waiters, and a clock. Everything they do with it is written once, in this
/// protocol's extension: submitting, performing effects, the worker tasks, `flush`, `wait`, the
/// timer and `cancelsRunningTask`.
///
/// An actor says only how its timer is delivered (a task on its clock that holds it weakly)
/// and how a task runs (in a worker task, off the actor; with `cancelsRunningTask`, in a child
/// task that a newer burst of its line cancels).
@usableFromInline
protocol ActorShell: Actor {
  associatedtype Lines: BurstLines
  associatedtype C: Clock where C.Duration == Duration

  var timer: ClockTimer<C> { get }
  /// `timer`'s time line, read inline by the specialised submission path.
  var timeline: ClockTimeline<C> { get }
  var tolerance: Duration? { get }
  var driver: BurstDriver<Lines> { get set }
  var waiters: ActorWaiters<Lines.LineID> { get set }
  /// With `cancelsRunningTask`: the task of each line's running run, to cancel on a new burst.
  var runningTasks: [Lines.LineID: Task<Void, Never>] { get set }
  var task: @Sendable (Lines.LineID, Lines.Work) async -> Void { get }
}

extension ActorShell {
  @usableFromInline typealias LineID = Lines.LineID
  @usableFromInline typealias Run = DecidedRun<Lines.Work>

  /// Submits `work` for `id`'s line now.
  @inlinable
  func submit(_ id: LineID, _ delay: RequestedDelay, work: Lines.Work?) -> DelayTicket {
    var effects = BurstEffects()
    let ticket = driver.delay(
      id, delay, now: timeline.now(), work: work, owner: self, effects: &effects)
    perform(effects, of: id)
    if effects.workersToStart > 0 { awaitRunsOnClock() }
    return ticket
  }

  /// Submits `work` for `id`'s line at `now`, an instant read from ``timeline`` before: for
  /// `combine`, whose merge and submission must see the same instant (T7). Not the body of
  /// ``submit(_:_:work:)``: calling through it there cost the keyed actor's submission about
  /// 240 instructions (`actor-arm`, scripts/instructions.sh).
  @inlinable
  func submit(
    _ id: LineID, _ delay: RequestedDelay, work: Lines.Work?, at now: TimelineInstant
  ) -> DelayTicket {
    var effects = BurstEffects()
    let ticket = driver.delay(id, delay, now: now, work: work, owner: self, effects: &effects)
    perform(effects, of: id)
    if effects.workersToStart > 0 { awaitRunsOnClock() }
    return ticket
  }

  /// Performs `effects` with the one interpreter: each worker is a task; then the waiters whose
  /// condition now holds resume. With `cancelsRunningTask`, an event that made `id`'s running
  /// run stale cancels its task.
  @inlinable
  func perform(_ effects: BurstEffects, of id: LineID? = nil) {
    if effects.cancelsRunningRun, let id { runningTasks[id]?.cancel() }
    effects.perform(
      startWorkers: { count in for _ in 0..<count { startWorker() } }, arm: { armTimer($0) },
      install: { driver.install($0, generation: $1) }, becameIdle: {})
    if !waiters.isEmpty { resumeWaiters() }
  }

  /// Runs the pending task of `id`'s line now and returns once it has finished (after the
  /// line's earlier runs, which it follows); with nothing pending it returns at once, and so it
  /// does when called from inside one of this actor's own tasks (it would wait for itself).
  @usableFromInline
  func flushAndWait(_ id: LineID) async {
    let effects = driver.flush(id, at: timeline.saturatingNow())
    perform(effects)
    guard effects.endedCount > 0, !RunningOwner.isCurrentRun(of: ObjectIdentifier(self)) else {
      return
    }
    await wait(until: .lineQuiet(id))
  }

  /// Runs every pending task now and returns once all of them have finished; from inside one of
  /// this actor's own tasks, it returns at once.
  @usableFromInline
  func flushAllAndWait() async {
    perform(driver.flushAll(at: timeline.saturatingNow()))
    guard !RunningOwner.isCurrentRun(of: ObjectIdentifier(self)) else { return }
    await wait(until: .runsDrained)
  }

  @inlinable
  func wait(until condition: ActorWaiters<LineID>.Condition) async {
    guard !ActorWaiters.holds(condition, in: driver) else { return }
    await withCheckedContinuation { waiters.add(condition, $0) }
  }

  @usableFromInline
  func resumeWaiters() {
    for waiter in waiters.takeSatisfied(by: driver) { waiter.resume() }
  }

  // MARK: - Workers

  /// Starts a worker task: it takes batches of ready runs and runs them one after another,
  /// holding the actor weakly between batches, until none is left. On a clock that tracks runs
  /// (`ManualClock`), the clock starts it, so that its next `advance` awaits a run that a
  /// submission started as it awaits a timer's, and goes on while that run sleeps on it (T5).
  @inlinable
  func startWorker() {
    let owner = ObjectIdentifier(self)
    let task = self.task
    let worker: @Sendable () async -> Void = { [weak self] in
      var finished: [LineID] = []
      while let next = await self?.nextRuns(finishing: finished), !next.runs.isEmpty {
        finished.removeAll(keepingCapacity: true)
        for (id, run) in next.runs {
          if let child = next.child {
            await child.value
          } else {
            await RunningOwner.run(owner: owner) { await task(id, run.work) }
          }
          run.resolve()
          finished.append(id)
        }
      }
    }
    if let tracker = timer.runTracker {
      tracker.startRun(worker)
    } else {
      Task(operation: worker)
    }
  }

  /// Called by a worker: reports `finished` runs and takes the next batch. With
  /// `cancelsRunningTask`, the batch is one run, already started here in a child task that is
  /// registered as its line's running task before anything can make it stale.
  @inlinable
  func nextRuns(finishing finished: [LineID]) -> (runs: [(LineID, Run)], child: Task<Void, Never>?)
  {
    let cancels = driver.cancelsStaleRuns
    if cancels { for id in finished { runningTasks[id] = nil } }
    let (runs, effects) = driver.nextRuns(finishing: finished, batchLimit: cancels ? 1 : 64)
    perform(effects)
    guard cancels, let (id, run) = runs.first else { return (runs, nil) }
    let (owner, task, work, stale) = (ObjectIdentifier(self), self.task, run.work, run.isStale)
    let child = Task {
      // Stale before it started: it starts cancelled, before the task sees anything.
      if stale { withUnsafeCurrentTask { $0?.cancel() } }
      await RunningOwner.run(owner: owner) { await task(id, work) }
    }
    runningTasks[id] = child
    return (runs, child)
  }

  // MARK: - The timer

  /// Runs started by a submission: a test clock's next `advance` waits for them (T5). A clock
  /// that tracks runs knows them already, through their workers (``startWorker()``).
  @usableFromInline
  func awaitRunsOnClock() {
    guard timer.runTracker == nil else { return }
    timer.awaitOnClock { [weak self] in await self?.wait(until: .runsDrained) }
  }

  /// The instance's timer named `generation` fired: ends the due bursts, then returns once
  /// every run decided so far has returned (so that a test clock's `advance` waits for them).
  /// On a clock that tracks runs, it returns at once: the clock awaits the workers it started
  /// (``startWorker()``) by itself, and goes on while one sleeps on it.
  @inlinable
  func timerFired(generation: UInt64) async {
    perform(driver.timerFired(at: timeline.now(), generation: generation))
    guard timer.runTracker == nil else { return }
    await wait(until: .runsDrained)
  }

  /// Arms the one timer for `request`, delivering to ``timerFired(generation:)`` in a task that
  /// holds the actor weakly; the delivery is made here, so that in a client the firing, and the
  /// workers it starts, are specialised as the submission is.
  @inlinable
  func armTimer(_ request: TimerRequest) -> TimerHandle {
    let generation = request.generation
    return arm(
      request, delivery: .task { [weak self] in await self?.timerFired(generation: generation) })
  }

  /// Arms `request` on the timer; not inlinable, as the timer is generic code, and called only
  /// when the earliest deadline moves earlier. The interpreter installs the handle.
  @usableFromInline
  func arm(_ request: TimerRequest, delivery: TimerDelivery) -> TimerHandle {
    timer.arm(at: request.deadline, tolerance: tolerance, delivery: delivery)
  }

  /// Brings `record` up to date (the single actor's tickets learn preemptions on demand).
  func synchronize(_ record: BurstRecord) async {
    driver.synchronize(record)
    record.resumeResolved()
  }
}
