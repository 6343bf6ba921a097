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
///
/// `delay` is `@inlinable`, and the actor `final`: a client compiles the submission for its own
/// clock, so that a call looks up no generic metadata (the library's generic copy did, and took
/// 8,330 instructions per call where the client's takes about 990: `actor-preempt` in
/// BENCHMARKS.md). The timer's firing and the workers are the shared code of `ActorShell`.
public final actor DelayedPreemptiveActor<C: Clock> where C.Duration == Duration {
  @usableFromInline typealias Lines = SingleLine<AsyncWork>
  @usableFromInline static var line: Lines.LineID { Lines.LineID() }

  /// The clock as a time line: the driver runs on ``TimelineInstant``, compiled and
  /// specialised once in this module, instead of on `C.Instant` through generic witnesses on
  /// every call.
  @usableFromInline let timer: ClockTimer<C>
  @usableFromInline let timeline: ClockTimeline<C>
  @usableFromInline let tolerance: Duration?
  @usableFromInline var driver: BurstDriver<Lines>
  @usableFromInline var waiters = ActorWaiters<Lines.LineID>()
  @usableFromInline var runningTasks: [Lines.LineID: Task<Void, Never>] = [:]
  @usableFromInline let task: @Sendable (Lines.LineID, AsyncWork) async -> Void = { _, work in
    await work.run()
  }

  /// Creates an actor whose timers sleep on `clock`.
  ///
  /// - Parameters:
  ///   - clock: The clock of every deadline; `ManualClock` for tests.
  ///   - options: Deadline policy, `maxWait`, `maxSubmissions`, `leading`, `minimumSpacing` and
  ///     tolerance for every burst.
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
    timeline = timer.timeline
    tolerance = options.tolerance
    driver = BurstDriver(
      options: options, maxConcurrentTasks: 1, cancelsStaleRuns: cancelsRunningTask,
      keepsLastWork: true, tracking: .onDemand, instance: "DelayedPreemptiveActor")
    driver.installLine(Self.line, work: task.map(AsyncWork.init))
  }

  deinit {
    driver.release().performRelease()
  }

  /// Submits `task` (or the task given last, when `nil`) to run `duration` from now, preempting
  /// the pending submission of the burst. Zero or negative means "due now"; a delay beyond the
  /// clock's range (centuries) saturates to "never, unless flushed". With no task ever given,
  /// the ticket is `.cancelled` at once and nothing runs.
  @inlinable
  @discardableResult
  public func delay(_ duration: Duration, task: (@Sendable () async -> Void)? = nil)
    -> DelayTicket
  {
    submit(Self.line, .duration(duration), work: task.map(AsyncWork.init))
  }

  /// Ends the pending burst without running it: its submissions resolve `.cancelled`, and its
  /// timer can no longer affect a later burst. A task that already started runs to its end.
  public func cancel() {
    perform(driver.cancel(Self.line))
  }

  /// Runs the pending task now and returns once it has finished; does nothing when idle.
  ///
  /// Called from inside this actor's own running task, it starts the run right after the
  /// current task and returns at once, since waiting for it there would wait for itself. Any
  /// other caller waits, including a task that the running task spawned.
  public func flush() async {
    await flushAndWait(Self.line)
  }

  /// Whether a burst is pending: submitted, and neither run nor cancelled yet.
  public var isPending: Bool {
    driver.isPending(Self.line)
  }

  /// Returns once no burst is pending and no task is running.
  ///
  /// Graceful shutdown is `await actor.flush()` then `await actor.wait()`: the flush starts the
  /// pending task at once, and the wait also covers a task that had already started, which
  /// `flush()` alone does not wait for. With a pending burst and a frozen `ManualClock`, it
  /// returns only once `advance` makes the burst due. Do not call it from the actor's own
  /// task, which would wait for itself.
  public func wait() async {
    await wait(until: .idle)
  }
}

extension DelayedPreemptiveActor where C == ContinuousClock {
  /// Creates an actor whose timers follow real time on `ContinuousClock`.
  public init(options: DelayOptions = DelayOptions(), task: (@Sendable () async -> Void)? = nil) {
    self.init(clock: ContinuousClock(), options: options, task: task)
  }
}

extension DelayedPreemptiveActor: ActorShell {}

extension DelayedPreemptiveActor: TicketOwner {}
