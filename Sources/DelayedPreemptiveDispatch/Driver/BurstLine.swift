/// One line of bursts: a queue's, an actor's, one key's of a keyed instance, or one stream
/// iterator's. It holds the line's ``PreemptionStateMachine``, the tickets of its pending burst
/// (``TicketLedger``) and the runs its bursts decided, oldest first.
///
/// Every answer of the machine becomes tickets and runs here, once, for every shell: the two
/// switches over the machine's answers (``submit(at:until:work:rules:ids:owner:)`` and
/// ``fire(at:generation:rules:ids:)``), the end of a burst (``BurstEnding``), the runs of one line
/// starting one at a time in decision order, and staleness (`cancelsRunningTask`).
@usableFromInline
struct BurstLine<Work: Sendable>: Sendable {
  @usableFromInline typealias Machine = PreemptionStateMachine<Work>

  // Declared so that the small fields fill the tail padding of the larger ones: the line of a
  // pending key is 88 bytes with `Work == Void`.
  @usableFromInline var machine: Machine
  @usableFromInline var ledger: TicketLedger
  /// A run of this line has started and not yet returned.
  @usableFromInline var isRunning = false
  /// With `cancelsRunningTask`: how many of the oldest runs in `decided` belong to bursts that a
  /// newer burst has made stale; they start already cancelled.
  @usableFromInline var staleDecided: Int32 = 0
  /// Runs decided and not yet started, oldest first; they start one at a time.
  @usableFromInline var decided = FIFO<DecidedRun<Work>>()

  @inlinable
  init(work: Work?, tracking: TicketLedger.Tracking, keepsAll: Bool) {
    machine = Machine(work: work)
    ledger = TicketLedger(tracking: tracking, keepsAll: keepsAll)
  }

  @inlinable var isPending: Bool { machine.isPending }
  /// Neither pending nor running, and no run waits to start.
  @inlinable var isIdle: Bool { !machine.isPending && !isRunning && decided.isEmpty }
  /// A run of the line is decided or running.
  @inlinable var hasRuns: Bool { isRunning || !decided.isEmpty }
  /// The generation of the machine's live timer, if one is in flight.
  @inlinable var liveTimerGeneration: UInt64? { machine.liveTimerGeneration }

  /// Whether a scheduled timer named `generation` still matters to the line: its machine's live
  /// timer, the gate of its oldest run, or (while it is idle, kept for its spacing) the check
  /// that drops it.
  @inlinable
  func awaitsTimer(_ generation: UInt64) -> Bool {
    liveTimerGeneration == generation || isIdle
      || decided.contains { $0.gate == generation }
  }

  // MARK: - The machine's answers

  /// A submission; a `leading` run or an ended burst in the answer is not yet decided: the
  /// driver decides it (``decide(_:)``).
  @inlinable @inline(__always)
  mutating func submit(
    at now: TimelineInstant, until requested: TimelineInstant, work: Work?, rules: BurstRules,
    ids: inout BurstIDs, owner: AnyObject
  ) -> LineSubmission<Work> {
    switch machine.delay(at: now, until: requested, work: work, rules: rules, ids: &ids) {
    case .rejected:
      return LineSubmission<Work>(ticket: DelayTicket(resolved: .cancelled))
    case .joined(let seq, let timer):
      let (ticket, preempted) = ledger.join(seq: seq)
      return LineSubmission(ticket: ticket, timer: timer, preempted: preempted)
    case .started(let seq, let timer, let leading):
      var submission = LineSubmission<Work>(
        ticket: ledger.begin(seq: seq, leading: leading != nil, owner: owner), started: true,
        timer: timer)
      if let leading { submission.leading = leadingRun(leading) }
      return submission
    case .completed(let seq, let started, let leading, let run, let end):
      var submission: LineSubmission<Work>
      if started {
        submission = LineSubmission<Work>(
          ticket: ledger.begin(seq: seq, leading: leading != nil, owner: owner), started: true)
        if let leading { submission.leading = leadingRun(leading) }
      } else {
        let (ticket, preempted) = ledger.join(seq: seq)
        submission = LineSubmission<Work>(ticket: ticket, preempted: preempted)
      }
      submission.ending = ended(run, end)
      return submission
    }
  }

  /// A submission to the pending burst when no `maxSubmissions` can end it: the hot path of
  /// every shell, kept apart from the start of a burst so that it moves no run, record or flag
  /// it does not need. A returned timer replaces the live one, which is then stale. The burst's
  /// record goes into `preempted` when tasks await its tickets
  /// (``TicketLedger/join(seq:preempted:)``).
  ///
  /// - Precondition: the line is pending, and `rules.maxSubmissions` is `nil`.
  @inlinable @inline(__always)
  mutating func join(
    at now: TimelineInstant, until requested: TimelineInstant, work: Work?, rules: BurstRules,
    ids: inout BurstIDs, preempted: inout BurstRecord?
  ) -> (ticket: DelayTicket, timer: TimerRequest?, endsNow: Bool) {
    let (seq, timer, endsNow) = machine.join(
      at: now, until: requested, work: work, rules: rules, ids: &ids)
    let ticket = ledger.join(seq: seq, preempted: &preempted)
    return (ticket, timer, endsNow)
  }

  /// Whether a submission at `now` joins the pending burst: one is pending and not yet due
  /// (or pending at all, with ``BurstRules/joinsDueBurst``).
  @inlinable
  func joins(at now: TimelineInstant, rules: BurstRules) -> Bool {
    machine.joins(at: now, rules: rules)
  }

  /// Ends the pending burst if it is due by `now` and its timer has not fired yet, as that
  /// timer would have (T7); `nil` when no burst is due.
  @inlinable
  mutating func endBurstDue(by now: TimelineInstant, rules: BurstRules) -> BurstEnding<Work>? {
    machine.endBurstDue(by: now, rules: rules).map { ended($0.0, $0.1) }
  }

  /// Ends the pending burst that a submission made due at `now`
  /// (``join(at:until:work:rules:ids:preempted:)`` said `endsNow`).
  @inlinable
  mutating func endDueBurst(at now: TimelineInstant, rules: BurstRules) -> BurstEnding<Work> {
    let (work, end) = machine.endDueBurst(at: now, rules: rules)
    return ended(work, end)
  }

  /// The line's timer named `generation` fired at `now`: the gate of a run waiting for the
  /// spacing opens, or the machine's timer fires.
  @inlinable
  mutating func fire(
    at now: TimelineInstant, generation: UInt64, rules: BurstRules, ids: inout BurstIDs
  ) -> LineFire<Work> {
    if decided.contains(where: { $0.gate == generation }) {
      let opensOldest = decided.first?.gate == generation
      decided.modifyAll { if $0.gate == generation { $0.gate = nil } }
      // The line waited on this gate only when the run is its oldest and nothing runs; a run
      // behind others starts after them, as usual.
      return opensOldest && !isRunning ? .runReady : .gateOpened
    }
    switch machine.timerFired(at: now, generation: generation, rules: rules, ids: &ids) {
    case .stale: return .stale
    case .rearm(let timer): return .rearm(timer)
    case .ended(let work, let end): return .ended(ended(work, end))
    }
  }

  /// Ends the pending burst by running its task at `now`; `nil` when idle.
  @inlinable
  mutating func flush(at now: TimelineInstant, rules: BurstRules) -> BurstEnding<Work>? {
    machine.flush(at: now, rules: rules).map { ended($0.0, $0.1) }
  }

  /// Ends the pending burst without running it; `nil` when idle. With `forgettingWork`, the
  /// task given last is forgotten too (the owner is going away).
  @inlinable
  mutating func cancel(forgettingWork: Bool = false) -> BurstResolution? {
    let end = forgettingWork ? machine.release() : machine.cancel()
    return end.map { BurstResolution(record: ledger.end(), lastSeq: $0.lastSeq, cancelled: true) }
  }

  /// Forgets the task (or value) given last, so that an idle line keeps nothing it captured.
  @inlinable
  mutating func forgetWork() {
    machine.forgetWork()
  }

  /// With `combine`: takes the pending burst's value out, for the shell to merge the next
  /// submission into; `nil` when nothing is pending or the burst has only its leading
  /// submission (the trailing value starts afresh), or is due at `now`.
  @inlinable
  mutating func takeValueToCombine(at now: TimelineInstant) -> Work? {
    machine.takeValueToCombine(at: now)
  }

  /// Brings `record` up to date if it belongs to the pending burst.
  @inlinable
  mutating func synchronize(_ record: BurstRecord) {
    ledger.synchronize(record, lastSeq: machine.pendingLastSeq)
  }

  // MARK: - Runs

  /// Appends a decided run; returns whether the line just became ready to start it (no run of
  /// the line is running or waiting before it, and the run waits for no spacing).
  @inlinable
  mutating func decide(_ run: DecidedRun<Work>) -> Bool {
    decided.append(run)
    return !isRunning && decided.count == 1 && run.gate == nil
  }

  /// `cancelsRunningTask`: a new burst started, so every run of the earlier bursts is stale.
  /// Returns whether a run of the line is running now (its task must be cancelled).
  @inlinable
  mutating func makeEarlierRunsStale() -> Bool {
    staleDecided = Int32(decided.count)
    return isRunning
  }

  /// Starts the oldest decided run.
  @inlinable
  mutating func startNextRun() -> DecidedRun<Work> {
    guard var run = decided.popFirst() else {
      preconditionFailure("Internal inconsistency: a run was started that was never decided")
    }
    if staleDecided > 0 {
      staleDecided -= 1
      run.isStale = true
    }
    isRunning = true
    return run
  }

  /// The running run returned; returns whether another run of the line is ready to start.
  @inlinable
  mutating func runFinished() -> Bool {
    isRunning = false
    guard let next = decided.first else { return false }
    return next.gate == nil
  }

  /// When the spacing of the line's last run ends (zero without spacing).
  @inlinable var spacingEnds: TimelineInstant { machine.nextRunStart }

  /// Whether the line holds nothing and the spacing of its last run has passed by `now`: it
  /// may be dropped.
  @inlinable
  func isIdle(at now: TimelineInstant) -> Bool {
    isIdle && machine.spacingAllowsRun(at: now)
  }

  // MARK: - Helpers

  @inlinable
  func leadingRun(_ work: Work) -> DecidedRun<Work> {
    DecidedRun(work: work, record: ledger.current, isLeading: true)
  }

  @inlinable
  mutating func ended(_ work: Work?, _ end: Machine.BurstEnd) -> BurstEnding<Work> {
    let record = ledger.end()
    var run = work.map { DecidedRun(work: $0, record: record, isLeading: false) }
    run?.startsAt = end.runStartsAt
    return BurstEnding(
      run: run, resolution: BurstResolution(record: record, lastSeq: end.lastSeq, cancelled: false))
  }
}
