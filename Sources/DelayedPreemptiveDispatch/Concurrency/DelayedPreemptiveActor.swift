/// Runs an async task once a quiet period has passed, in Swift concurrency: the parallel of
/// ``DelayedPreemptiveDispatchQueue``, with the same rules, generic over its clock.
///
/// ```swift
/// let search = DelayedPreemptiveActor(options: DelayOptions(deadlinePolicy: .restart))
/// func textDidChange(_ text: String) async {
///   let ticket = await search.delay(.milliseconds(300)) { await results.load(text) }
///   if await ticket.outcome == .preempted { return }   // a newer keystroke took over
/// }
/// ```
///
/// - Pending work: as for the queue; every submission resolves exactly once (``DelayTicket``).
/// - Where tasks run: in an unstructured task, off the actor, one after another: tasks of one
///   actor never overlap, and a running task does not block calls into the actor. A task may
///   call `delay`, `cancel` or `flush` on its own actor.
/// - Timers: one sleeping task per instance, never one per call; with a ``SchedulingClock``
///   such as `ManualClock`, the clock calls back instead, and awaits the run.
/// - Memory: the sleeping timer holds the actor weakly. Releasing the last reference cancels
///   the pending burst, stops the timer and frees the task.
public actor DelayedPreemptiveActor<C: Clock> where C.Duration == Duration {
  typealias Driver = BurstDriver<AsyncWork>

  /// The clock as ticks: the driver runs on `Tick`, compiled and specialised once in this
  /// module, instead of on `C.Instant` through generic witnesses on every call.
  let timer: ClockTimer<C>
  let tolerance: Duration?
  private var driver: Driver
  private var runs: ActorRuns
  /// Tasks suspended in ``wait()``.
  private var idleWaiters: [CheckedContinuation<Void, Never>] = []

  /// Creates an actor whose timers sleep on `clock`.
  ///
  /// - Parameters:
  ///   - clock: The clock of every deadline; `ManualClock` for tests.
  ///   - options: Deadline policy, `maxWait`, `leading` and tolerance for every burst.
  ///   - task: The task to run; a `delay` with a task replaces it.
  public init(
    clock: C, options: DelayOptions = DelayOptions(),
    task: (@Sendable () async -> Void)? = nil
  ) {
    self.init(clock: clock, options: options, cancelsRunningTask: false, task: task)
  }

  /// Creates an actor that can cancel a stale running task: with `cancelsRunningTask`, a
  /// submission that starts a new burst makes every unfinished run of earlier bursts stale. The
  /// task still running is cancelled, and a run still queued behind it (a burst flushed in the
  /// meantime) starts in a cancelled task. The new burst's own runs are never cancelled by it.
  ///
  /// Cancellation is Swift task cancellation, so it is cooperative: the running task sees
  /// `Task.isCancelled` (or a `CancellationError` from `Task.checkCancellation()` and from the
  /// sleeps and requests it awaits) and should return early. Tasks still never overlap: the new
  /// burst's task starts only once the cancelled one has returned. The cancelled task's ticket
  /// still resolves `.executed` (it ran, and has returned). Use it when a newer submission makes
  /// the running work pointless, as in search as you type:
  ///
  /// ```swift
  /// let search = DelayedPreemptiveActor(
  ///   clock: ContinuousClock(), options: DelayOptions(deadlinePolicy: .restart),
  ///   cancelsRunningTask: true)
  /// func textDidChange(_ text: String) async {
  ///   await search.delay(.milliseconds(300)) {
  ///     guard let results = try? await index.search(text) else { return }  // throws once stale
  ///     await view.show(results)
  ///   }
  /// }
  /// ```
  public init(
    clock: C, options: DelayOptions = DelayOptions(), cancelsRunningTask: Bool,
    task: (@Sendable () async -> Void)? = nil
  ) {
    timer = ClockTimer(clock: clock)
    tolerance = options.tolerance
    driver = Driver(options: options, work: task.map(AsyncWork.init))
    runs = ActorRuns(cancelsStaleRuns: cancelsRunningTask)
  }

  deinit {
    driver.release().performRelease()
  }

  /// Submits `task` (or the task given last, when `nil`) to run `duration` from now, preempting
  /// the pending submission of the burst. Zero or negative means "due now"; a delay beyond the
  /// clock's range (centuries) saturates to "never, unless flushed". With no task ever given,
  /// the ticket is `.cancelled` at once and nothing runs.
  @discardableResult
  public func delay(_ duration: Duration, task: (@Sendable () async -> Void)? = nil)
    -> DelayTicket
  {
    let (ticket, effects) = driver.delay(
      .duration(duration), now: timer.now(), work: task.map(AsyncWork.init), owner: self)
    if effects.startedBurst { runs.cancelStaleRuns() }
    perform(effects)
    return ticket
  }

  /// Ends the pending burst without running it: its submissions resolve `.cancelled`, and its
  /// timer can no longer affect a later burst. A task that already started runs to its end.
  public func cancel() {
    perform(driver.cancel())
  }

  /// Runs the pending task now and returns once it has finished; does nothing when idle.
  ///
  /// Called from inside this actor's own running task, it starts the run right after the
  /// current task and returns at once, since waiting for it there would wait for itself. Any
  /// other caller waits, including a task that the running task spawned.
  public func flush() async {
    guard let run = perform(driver.flush()) else { return }
    if !ActorRuns.isCurrentRun(of: ObjectIdentifier(self)) { await run.value }
  }

  /// Whether a burst is pending: submitted, and neither run nor cancelled yet.
  public var isPending: Bool {
    driver.isPending
  }

  /// Returns once no burst is pending and no task is running.
  ///
  /// Graceful shutdown is `await actor.flush()` then `await actor.wait()`: the flush starts the
  /// pending task at once, and the wait also covers a task that had already started, which
  /// `flush()` alone does not wait for. With a pending burst and a frozen `ManualClock`, it
  /// returns only once `advance` makes the burst due. Do not call it from the actor's own
  /// task, which would wait for itself.
  public func wait() async {
    guard driver.outstanding > 0 else { return }
    await withCheckedContinuation { idleWaiters.append($0) }
  }

  func timerFired(generation: UInt64) async {
    await perform(driver.timerFired(at: timer.now(), generation: generation))?.value
  }

  /// Performs `effects` with the one interpreter: each decided run is an unstructured task
  /// that starts once the previous run has returned. Returns the task of the last run started.
  @discardableResult
  private func perform(_ effects: BurstEffects) -> Task<Void, Never>? {
    var last: Task<Void, Never>?
    effects.perform(
      start: { count in
        for _ in 0..<count {
          let run = driver.takeRun()
          last = runs.enqueue(owner: ObjectIdentifier(self), run.work.run) { [weak self] id in
            run.resolve()
            await self?.runFinished(id)
          }
        }
      },
      arm: { arm($0) }, becameIdle: { resumeIdleWaiters() })
    return last
  }

  private func runFinished(_ id: UInt64) {
    runs.finished(id)
    if driver.runFinished() { resumeIdleWaiters() }
  }

  private func resumeIdleWaiters() {
    let waiters = idleWaiters
    idleWaiters = []
    for waiter in waiters { waiter.resume() }
  }

  func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    driver.install(handle, generation: generation)
  }
}

extension DelayedPreemptiveActor where C == ContinuousClock {
  /// Creates an actor whose timers follow real time on `ContinuousClock`.
  public init(options: DelayOptions = DelayOptions(), task: (@Sendable () async -> Void)? = nil) {
    self.init(clock: ContinuousClock(), options: options, task: task)
  }
}

extension DelayedPreemptiveActor: ActorShell {}

extension DelayedPreemptiveActor: TicketOwner {
  func synchronize(_ record: BurstRecord) async {
    driver.synchronize(record)
    record.resumeResolved()
  }
}
