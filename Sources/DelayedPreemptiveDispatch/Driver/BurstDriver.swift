/// The one driver of every shell: it turns the answers of its lines (``BurstLine``, one per
/// queue, actor, stream iterator or key) into ``BurstEffects`` for the one interpreter.
///
/// Everything between the machine and the interpreter is written here once: a submission
/// (with the `combine` merge and `cancelsRunningTask` staleness), a timer firing, `flush`,
/// `cancel` and their `All` forms, the end of a burst, the busy and idle states, the runs of a
/// line starting one at a time in decision order, the bound on concurrent runs, and dropping a
/// keyed line as soon as it is idle. Where the lines live is ``BurstLines``: ``SingleLine`` or
/// ``KeyedLines``.
///
/// A shell keeps the driver under its lock (the GCD shells, the stream) or in its isolation
/// (the actors), feeds it events, and performs the effects it returns; it says only how its
/// timer is delivered and how a task runs. Runs are taken by workers
/// (``nextRuns(finishing:batchLimit:)``): a line's runs start one at a time, in the order they
/// were decided, so a flushed task can never be overtaken by a later burst's, nor a leading
/// task by its own trailing one.
///
/// The driver and what it calls are `@inlinable`, so that a client compiles the keyed and
/// stream paths for its own key, value and element: run unspecialised from the client, generic
/// metadata lookups took more than half of every submission.
@usableFromInline
struct BurstDriver<Lines: BurstLines>: Sendable {
  @usableFromInline typealias LineID = Lines.LineID
  @usableFromInline typealias Work = Lines.Work
  @usableFromInline typealias Run = DecidedRun<Work>

  @usableFromInline let rules: BurstRules
  /// How many workers may run at once: `maxConcurrentTasks`, or a default.
  @usableFromInline let workerLimit: Int
  /// `cancelsRunningTask`: a new burst of a line makes every unfinished run of its earlier
  /// bursts stale (``DecidedRun/isStale``).
  @usableFromInline let cancelsStaleRuns: Bool
  /// `combine`: bursts keep every value, and no submission is preempted.
  @usableFromInline let keepsEveryValue: Bool
  /// A line keeps the task given last once its burst has ended (the single shells: a `delay`
  /// with no task reuses it); otherwise it forgets it, so that an idle line keeps no value.
  @usableFromInline let keepsLastWork: Bool
  /// How new lines' tickets learn about preemptions.
  @usableFromInline let tracking: TicketLedger.Tracking
  @usableFromInline var book = InstanceBookkeeping<LineID>()
  @usableFromInline var lines = Lines()
  @usableFromInline var workers = 0
  @usableFromInline var pendingCount = 0

  /// - Precondition: `maxConcurrentTasks`, when given, is at least 1; the message names the
  ///   parameter and `instance`, the public type.
  @usableFromInline
  init(
    options: DelayOptions, maxConcurrentTasks: Int? = nil, cancelsStaleRuns: Bool = false,
    keepsEveryValue: Bool = false, keepsLastWork: Bool = false,
    tracking: TicketLedger.Tracking = .always, joinsDueBurst: Bool = false,
    instance: String = "BurstDriver"
  ) {
    if let maxConcurrentTasks {
      requireArgument(
        maxConcurrentTasks >= 1,
        "\(instance): maxConcurrentTasks must be at least 1, got \(maxConcurrentTasks)")
    }
    rules = BurstRules(options, joinsDueBurst: joinsDueBurst)
    workerLimit = maxConcurrentTasks ?? 64
    self.cancelsStaleRuns = cancelsStaleRuns
    self.keepsEveryValue = keepsEveryValue
    self.keepsLastWork = keepsLastWork
    self.tracking = tracking
  }

  /// Creates `id`'s line with the task given at `init`: the one line of a single shell, which
  /// it keeps for good.
  @usableFromInline
  mutating func installLine(_ id: LineID, work: Work?) {
    _ = lines.insert(BurstLine(work: work, tracking: tracking, keepsAll: keepsEveryValue), for: id)
  }

  // MARK: - Reading

  @inlinable
  func isPending(_ id: LineID) -> Bool {
    lines.position(of: id).map { lines[at: $0].isPending } ?? false
  }

  /// Whether `id`'s line has a run decided or running.
  @usableFromInline
  func hasRuns(_ id: LineID) -> Bool {
    lines.position(of: id).map { lines[at: $0].hasRuns } ?? false
  }

  /// Pending bursts plus runs decided and not yet finished.
  @inlinable var outstanding: Int { book.outstanding }

  /// Runs decided and not yet finished, all lines together.
  @inlinable var unfinishedRuns: Int { book.outstanding - pendingCount }

  /// Lines that hold state, and scheduled timers; for tests.
  @usableFromInline var footprint: (lines: Int, timers: Int) { (lines.count, lines.scheduledCount) }

  /// The deadline of the armed timer, if one is armed.
  var armedDeadline: TimelineInstant? { book.armed?.deadline }

  // MARK: - Submissions

  /// A submission; what the shell must do afterwards goes into `effects`, which the caller
  /// keeps outside its lock (returning it with the ticket would copy it through the lock's
  /// generic result on every call).
  @inlinable @inline(__always)
  mutating func delay(
    _ id: LineID, _ delay: RequestedDelay, now: TimelineInstant, work: Work?, owner: AnyObject,
    effects: inout BurstEffects
  ) -> DelayTicket {
    let requested = book.durations.deadline(after: delay, from: now)
    guard let position = lines.position(of: id) else {
      return start(id, at: now, until: requested, work: work, owner: owner, effects: &effects)
    }
    guard rules.maxSubmissions == nil, lines[at: position].joins(at: now, rules: rules) else {
      return submit(
        id, at: position, now: now, until: requested, work: work, owner: owner,
        effects: &effects)
    }
    // The hot path: a submission joins the pending burst.
    let (ticket, timer, endsNow) = lines[at: position].join(
      at: now, until: requested, work: work, rules: rules, ids: &book.ids,
      preempted: &effects.preempted)
    if let timer {
      lines.timerReplaced()
      schedule(timer, for: id, &effects)
    } else if endsNow {
      end(lines[at: position].endDueBurst(at: now, rules: rules), of: id, at: position, &effects)
    }
    return ticket
  }

  /// A submission, returning its ticket and effects together.
  @inlinable
  mutating func delay(
    _ id: LineID, _ delay: RequestedDelay, now: TimelineInstant, work: Work?, owner: AnyObject
  ) -> (DelayTicket, BurstEffects) {
    var effects = BurstEffects()
    let ticket = self.delay(id, delay, now: now, work: work, owner: owner, effects: &effects)
    return (ticket, effects)
  }

  /// With `combine`: takes the value of `id`'s pending burst out, for the shell to merge the
  /// next submission into with ``merge(_:into:with:)`` where no lock that workers need is held
  /// (the GCD shells, under their gate; the actors, in their isolation); the shell then submits
  /// the merged value, at the same `now`, before anything can end the burst. `nil` when the
  /// line has no burst to merge into, or its burst is due at `now` (the submission ends it
  /// first, with its own value: T7).
  @inlinable
  mutating func takeValueToCombine(_ id: LineID, at now: TimelineInstant) -> Work? {
    guard let position = lines.position(of: id) else { return nil }
    return lines[at: position].takeValueToCombine(at: now)
  }

  /// The `combine` rule, for every shell: the value taken out of the pending burst with
  /// `next` merged in, or `next` alone when no burst takes it (C1, C2).
  @inlinable
  static func merge(
    _ next: Work, into taken: consuming Work?, with combine: (inout Work, Work) -> Void
  ) -> Work {
    // Moved out of `taken`, so that the value is not shared and `combine` changes it in place.
    guard var value = taken.take() else { return next }
    combine(&value, next)
    return value
  }

  /// The first submission of a line that holds no state: its line is built aside and stored
  /// once.
  @inlinable @inline(never)
  mutating func start(
    _ id: LineID, at now: TimelineInstant, until requested: TimelineInstant, work: Work?,
    owner: AnyObject, effects: inout BurstEffects
  ) -> DelayTicket {
    var line = BurstLine<Work>(work: nil, tracking: tracking, keepsAll: keepsEveryValue)
    let submission = line.submit(
      at: now, until: requested, work: work, rules: rules, ids: &book.ids, owner: owner)
    let position = lines.insert(line, for: id)
    return apply(submission, of: id, at: position, &effects)
  }

  /// A submission that starts a burst of a line with state, or may end one (`maxSubmissions`).
  /// A burst already due at `now`, whose timer is late, ends first, as that timer would have
  /// ended it (T7); the submission then starts the next burst.
  @inlinable @inline(never)
  mutating func submit(
    _ id: LineID, at position: Int, now: TimelineInstant, until requested: TimelineInstant,
    work: Work?, owner: AnyObject, effects: inout BurstEffects
  ) -> DelayTicket {
    var position = position
    if let ending = lines[at: position].endBurstDue(by: now, rules: rules) {
      end(ending, of: id, at: position, &effects)
      // A keyed line with nothing left to run is dropped: the submission starts it afresh.
      guard let kept = lines.position(of: id) else {
        return start(id, at: now, until: requested, work: work, owner: owner, effects: &effects)
      }
      position = kept
    }
    let hadTimer = lines[at: position].liveTimerGeneration != nil
    let submission = lines[at: position].submit(
      at: now, until: requested, work: work, rules: rules, ids: &book.ids, owner: owner)
    if hadTimer && submission.timer != nil { lines.timerReplaced() }
    if cancelsStaleRuns && submission.started {
      // Every run of the line's earlier bursts is stale now (before this burst's leading run
      // is decided): the shell cancels the running one, the others start cancelled.
      if lines[at: position].makeEarlierRunsStale() { effects.cancelsRunningRun = true }
    }
    return apply(submission, of: id, at: position, &effects)
  }

  /// What a submission other than a plain join asks for.
  @inlinable
  mutating func apply(
    _ submission: LineSubmission<Work>, of id: LineID, at position: Int,
    _ effects: inout BurstEffects
  ) -> DelayTicket {
    effects.preempted = submission.preempted
    if submission.started {
      book.burstStarted(&effects)
      pendingCount += 1
    }
    if let leading = submission.leading { decide(leading, for: id, at: position, &effects) }
    if let timer = submission.timer { schedule(timer, for: id, &effects) }
    if let ending = submission.ending { end(ending, of: id, at: position, &effects) }
    return submission.ticket
  }

  // MARK: - Ending bursts

  @inlinable
  mutating func cancel(_ id: LineID) -> BurstEffects {
    var effects = BurstEffects()
    cancel(id, &effects)
    return effects
  }

  /// Ends `id`'s pending burst by running its task at `now`, whatever the spacing.
  @inlinable
  mutating func flush(_ id: LineID, at now: TimelineInstant) -> BurstEffects {
    var effects = BurstEffects()
    flush(id, at: now, &effects)
    return effects
  }

  @inlinable
  mutating func cancelAll() -> BurstEffects {
    var effects = BurstEffects()
    for id in lines.pendingIDs() { cancel(id, &effects) }
    return effects
  }

  @inlinable
  mutating func flushAll(at now: TimelineInstant) -> BurstEffects {
    var effects = BurstEffects()
    for id in lines.pendingIDs() { flush(id, at: now, &effects) }
    return effects
  }

  /// The owner is going away: cancel every pending burst, forget the tasks given last, and
  /// stop the timer.
  @inlinable
  mutating func release() -> BurstEffects {
    var effects = BurstEffects()
    for id in lines.pendingIDs() { cancel(id, forgettingWork: true, &effects) }
    lines.forgetAllWork()
    book.disarm(&effects)
    return effects
  }

  /// Stops the timer: nothing is armed any more, and its handle is cancelled.
  @usableFromInline
  mutating func disarm(_ effects: inout BurstEffects) {
    book.disarm(&effects)
  }

  @inlinable
  mutating func cancel(_ id: LineID, forgettingWork: Bool = false, _ effects: inout BurstEffects) {
    guard let position = lines.position(of: id),
      let resolution = lines[at: position].cancel(forgettingWork: forgettingWork)
    else { return }
    end(BurstEnding(run: nil, resolution: resolution), of: id, at: position, &effects)
  }

  @inlinable
  mutating func flush(_ id: LineID, at now: TimelineInstant, _ effects: inout BurstEffects) {
    guard let position = lines.position(of: id),
      let ending = lines[at: position].flush(at: now, rules: rules)
    else { return }
    end(ending, of: id, at: position, &effects)
  }

  /// The instance's timer named `generation` fired at `now`: ends the bursts that are due, in
  /// deadline order, at most `limit` of them (see ``popDue(at:limit:)`` for the rest), and
  /// re-arms for the earliest deadline left.
  @inlinable
  mutating func timerFired(
    at now: TimelineInstant, generation: UInt64, limit: Int = .max
  ) -> BurstEffects {
    guard book.fired(generation: generation) else { return BurstEffects() }
    return popDue(at: now, limit: limit)
  }

  /// Hands the due timers of at most `limit` lines to their lines, in deadline order. When
  /// due timers remain, `effects.moreDue` asks the shell to call again once it has released its
  /// lock (so that workers can take the runs decided so far); otherwise the timer is armed for
  /// the earliest deadline left, unless an earlier one is armed already.
  @inlinable
  mutating func popDue(at now: TimelineInstant, limit: Int) -> BurstEffects {
    var effects = BurstEffects()
    var popped = 0
    while popped < limit, let (id, generation) = lines.popDue(by: now) {
      popped += 1
      guard let position = lines.position(of: id) else {
        lines.staleTimerHandedOut()
        continue
      }
      switch lines[at: position].fire(
        at: now, generation: generation, rules: rules, ids: &book.ids)
      {
      case .stale:
        lines.staleTimerHandedOut()
        // An idle line kept for its spacing goes once the spacing has passed.
        if Lines.dropsIdleLines && lines[at: position].isIdle(at: now) { lines.remove(id) }
      case .rearm(let timer): lines.schedule(timer, for: id)
      case .ended(let ending): end(ending, of: id, at: position, &effects)
      case .runReady:
        lines.staleTimerHandedOut()
        book.ready.append(id)
        startWorkers(&effects)
      case .gateOpened:
        lines.staleTimerHandedOut()
      }
    }
    if popped == limit, let earliest = lines.earliestDeadline, earliest <= now {
      effects.moreDue = true
    } else {
      armEarliest(&effects)
    }
    return effects
  }

  /// The burst of `id`'s line ended: its tickets resolve, its run is decided, and the line is
  /// dropped once idle.
  @inlinable
  mutating func end(
    _ ending: BurstEnding<Work>, of id: LineID, at position: Int, _ effects: inout BurstEffects
  ) {
    effects.resolve(ending.resolution)
    if let run = ending.run { decide(run, for: id, at: position, &effects) }
    pendingCount -= 1
    if !keepsLastWork { lines[at: position].forgetWork() }
    dropIfIdle(id, at: position, &effects)
    book.burstEnded(&effects)
  }

  // MARK: - Runs

  /// Called by a worker: marks the runs of `finishing` as returned (their tickets already
  /// resolved), then takes the next batch of ready runs, up to `batchLimit`, at most one per
  /// line. An empty batch means the worker stops.
  @inlinable
  mutating func nextRuns(
    finishing finished: [LineID], batchLimit: Int = 64
  ) -> (runs: [(LineID, Run)], effects: BurstEffects) {
    var effects = BurstEffects()
    for id in finished { runFinished(id, &effects) }
    let ready = book.ready.count
    let size = min(ready, max(1, min(batchLimit, ready / max(workerLimit, 1))))
    var runs: [(LineID, Run)] = []
    if size > 0 { runs.reserveCapacity(size) }
    while runs.count < size, let id = book.ready.popFirst() {
      runs.append((id, lines[at: lines.position(of: id)!].startNextRun()))
    }
    if runs.isEmpty { workers -= 1 }
    startWorkers(&effects)
    effects.becameIdle = book.outstanding == 0 && !finished.isEmpty
    return (runs, effects)
  }

  /// ``nextRuns(finishing:batchLimit:)`` for one run at a time, without arrays: the worker of a
  /// single line (a queue's serial worker, a stream's emission). `nil` means the worker stops.
  @inlinable
  mutating func nextRun(finishing finished: LineID?) -> (
    run: (id: LineID, run: Run)?, effects: BurstEffects
  ) {
    var effects = BurstEffects()
    if let finished { runFinished(finished, &effects) }
    var next: (LineID, Run)?
    if let id = book.ready.popFirst() {
      next = (id, lines[at: lines.position(of: id)!].startNextRun())
    } else {
      workers -= 1
    }
    startWorkers(&effects)
    effects.becameIdle = book.outstanding == 0 && finished != nil
    return (next, effects)
  }

  /// A run of `id`'s line returned: its next run is ready, or the line may be dropped.
  @inlinable
  mutating func runFinished(_ id: LineID, _ effects: inout BurstEffects) {
    let position = lines.position(of: id)!
    _ = book.runFinished()
    if lines[at: position].runFinished() {
      book.ready.append(id)
    } else {
      dropIfIdle(id, at: position, &effects)
    }
  }

  /// Drops an idle keyed line; with `minimumSpacing`, the line keeps its last run's start until
  /// the spacing has passed, and a timer at that instant drops it then.
  @inlinable
  mutating func dropIfIdle(_ id: LineID, at position: Int, _ effects: inout BurstEffects) {
    guard Lines.dropsIdleLines && lines[at: position].isIdle else { return }
    guard rules.minimumSpacingNanoseconds != nil else { return lines.remove(id) }
    let check = TimerRequest(
      deadline: lines[at: position].spacingEnds, generation: book.ids.nextGeneration())
    lines.timerReplaced()  // a timer no machine names: handed out as stale
    lines.scheduleGate(check, for: id)
    if book.armed.map({ $0.deadline > check.deadline }) ?? true {
      arm(at: check.deadline, &effects)
    }
  }

  /// Decides `run` for `id`'s line: it starts once the line's earlier runs have returned, and,
  /// with a start the spacing put later, once a timer has opened its gate.
  @inlinable
  mutating func decide(
    _ run: Run, for id: LineID, at position: Int, _ effects: inout BurstEffects
  ) {
    book.runDecided()
    var run = run
    if let startsAt = run.startsAt {
      let gate = TimerRequest(deadline: startsAt, generation: book.ids.nextGeneration())
      run.gate = gate.generation
      lines.timerReplaced()  // no machine names it either
      lines.scheduleGate(gate, for: id)
      if book.armed.map({ $0.deadline > startsAt }) ?? true { arm(at: startsAt, &effects) }
    }
    if lines[at: position].decide(run) { book.ready.append(id) }
    startWorkers(&effects)
  }

  /// Starts a worker per ready line, up to the limit: workers that are busy running a batch
  /// cannot take ready runs, and one that finds nothing left simply stops.
  @inlinable
  mutating func startWorkers(_ effects: inout BurstEffects) {
    let wanted = min(book.ready.count, workerLimit - workers)
    guard wanted > 0 else { return }
    workers += wanted
    effects.workersToStart += wanted
  }

  // MARK: - The timer

  /// Keeps `handle` as the armed timer's, or returns the handle to cancel.
  @inlinable
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    book.install(handle, generation: generation)
  }

  /// Brings `record` up to date if it belongs to a pending burst: for the lines whose tickets
  /// learn preemptions on demand (the single shells), when a task starts to await one.
  @usableFromInline
  mutating func synchronize(_ record: BurstRecord) {
    for id in lines.pendingIDs() { synchronize(record, of: id) }
  }

  /// Brings `record` up to date if it belongs to `id`'s pending burst.
  @usableFromInline
  mutating func synchronize(_ record: BurstRecord, of id: LineID) {
    guard let position = lines.position(of: id) else { return }
    lines[at: position].synchronize(record)
  }

  @inlinable
  mutating func schedule(_ timer: TimerRequest, for id: LineID, _ effects: inout BurstEffects) {
    lines.schedule(timer, for: id)
    if let armed = book.armed, armed.deadline <= timer.deadline { return }
    arm(at: timer.deadline, &effects)
  }

  @inlinable
  mutating func armEarliest(_ effects: inout BurstEffects) {
    guard let earliest = lines.earliestDeadline else { return }
    if let armed = book.armed, armed.deadline <= earliest { return }
    arm(at: earliest, &effects)
  }

  @inlinable
  mutating func arm(at deadline: TimelineInstant, _ effects: inout BurstEffects) {
    book.arm(TimerRequest(deadline: deadline, generation: book.ids.nextGeneration()), &effects)
  }
}
