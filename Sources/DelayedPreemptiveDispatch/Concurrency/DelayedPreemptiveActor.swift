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
  typealias Work = AsyncWork
  typealias Machine = PreemptionStateMachine<Tick, Work>

  /// The clock as ticks: the machine runs on `Tick`, compiled and specialised once in this
  /// module, instead of on `C.Instant` through generic witnesses on every call.
  private let timeline: ClockTimeline<C>
  private let tolerance: Duration?
  private var machine: Machine
  private var ledger = TicketLedger()
  private var durations = DurationCache()
  /// The sleeping task of the live timer, when the clock is not a ``SchedulingClock``. It is
  /// kept when a burst ends early, since the next burst may adopt it, and cancelled when the
  /// machine arms a replacement or the actor goes away.
  private var timerTask: Task<Void, Never>?
  /// The task that runs last; the next run waits for it, so runs never overlap.
  private var lastRun: Task<Void, Never>?

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
    timeline = ClockTimeline(clock: clock)
    tolerance = options.tolerance
    machine = Machine(options: options, work: task.map(AsyncWork.init))
  }

  deinit {
    timerTask?.cancel()
    guard let end = machine.release() else { return }
    let record = ledger.end()
    record.close(lastSeq: end.lastSeq)
    record.finish(.cancelled)
  }

  /// Submits `task` (or the task given last, when `nil`) to run `duration` from now, preempting
  /// the pending submission of the burst. Zero or negative means "due now"; a delay beyond the
  /// clock's range (centuries) saturates to "never, unless flushed". With no task ever given,
  /// the ticket is `.cancelled` at once and nothing runs.
  @discardableResult
  public func delay(_ duration: Duration, task: (@Sendable () async -> Void)? = nil)
    -> DelayTicket
  {
    let now = timeline.now()
    let requested = now.advanced(byNanoseconds: durations.nanoseconds(of: duration))
    switch machine.delay(at: now, until: requested, work: task.map(AsyncWork.init)) {
    case .rejected:
      return DelayTicket(resolved: .cancelled)
    case .joined(let seq, _, let request):
      if let request { arm(request) }
      return ledger.join(seq: seq)
    case .started(let seq, let request, let leading):
      let ticket = ledger.begin(seq: seq, leading: leading != nil, owner: self)
      if let leading, let record = ledger.current {
        enqueueRun(leading) { record.finishLeading() }
      }
      if let request { arm(request) }
      return ticket
    }
  }

  /// Ends the pending burst without running it: its submissions resolve `.cancelled`, and its
  /// timer can no longer affect a later burst. A task that already started runs to its end.
  public func cancel() {
    guard let end = machine.cancel() else { return }
    let record = ledger.end()
    record.close(lastSeq: end.lastSeq)
    record.finish(.cancelled)
  }

  /// Runs the pending task now and returns once it has finished; does nothing when idle.
  ///
  /// Called from inside one of this actor's own tasks, it starts the run right after the
  /// current task and returns at once, since waiting for it there would wait for itself.
  public func flush() async {
    let record: BurstRecord
    let run: Task<Void, Never>
    switch machine.flush() {
    case .idle:
      return
    case .end(let end):
      ledger.end().close(lastSeq: end.lastSeq)
      return
    case .run(let work, let end):
      record = ledger.end()
      record.close(lastSeq: end.lastSeq)
      run = enqueueRun(work) { record.finish(.executed) }
    }
    if RunningOwner.current != ObjectIdentifier(self) { await run.value }
  }

  /// Whether a burst is pending: submitted, and neither run nor cancelled yet.
  public var isPending: Bool {
    machine.isPending
  }

  private func timerFired(generation: UInt64) async {
    switch machine.timerFired(at: timeline.now(), generation: generation) {
    case .stale:
      return
    case .rearm(let request):
      arm(request)
    case .end(let end):
      ledger.end().close(lastSeq: end.lastSeq)
    case .run(let work, let end):
      let record = ledger.end()
      record.close(lastSeq: end.lastSeq)
      await enqueueRun(work) { record.finish(.executed) }.value
    }
  }

  /// Starts `work` after every earlier run, off the actor, then calls `completion`.
  @discardableResult
  private func enqueueRun(_ work: Work, completion: @escaping @Sendable () -> Void)
    -> Task<Void, Never>
  {
    let previous = lastRun
    let owner = ObjectIdentifier(self)
    let run = Task {
      await previous?.value
      await RunningOwner.$current.withValue(owner) { await work.run() }
      completion()
    }
    lastRun = run
    return run
  }

  private func arm(_ request: Machine.TimerRequest) {
    timerTask?.cancel()
    timerTask = nil
    let generation = request.generation
    if let scheduler = timeline.scheduler {
      let delay = timeline.now().duration(to: request.deadline)
      scheduler.schedule(after: delay, tolerance: tolerance) { [weak self] in
        await self?.timerFired(generation: generation)
      }
      return
    }
    let (clock, deadline) = (timeline.clock, timeline.instant(at: request.deadline))
    timerTask = Task { [weak self, tolerance] in
      do {
        try await clock.sleep(until: deadline, tolerance: tolerance)
      } catch {
        return
      }
      await self?.timerFired(generation: generation)
    }
  }
}

extension DelayedPreemptiveActor where C == ContinuousClock {
  /// Creates an actor whose timers follow real time on `ContinuousClock`.
  public init(options: DelayOptions = DelayOptions(), task: (@Sendable () async -> Void)? = nil) {
    self.init(clock: ContinuousClock(), options: options, task: task)
  }
}

extension DelayedPreemptiveActor: TicketOwner {
  func synchronize(_ record: BurstRecord) async {
    ledger.synchronize(record, lastSeq: machine.burst?.lastSeq)
  }
}

/// Which actor's task the current task is running, so that `flush()` from inside it does not
/// wait for itself.
enum RunningOwner {
  @TaskLocal static var current: ObjectIdentifier?
}
