/// One burst line with its tickets: a ``PreemptionStateMachine`` and the ``TicketLedger`` of its
/// current burst. Every machine action becomes ticket bookkeeping here, in one place, for every
/// shell: the single drivers hold one slot, the keyed driver one per key.
@usableFromInline
struct BurstSlot<Work: Sendable>: Sendable {
  @usableFromInline typealias Machine = PreemptionStateMachine<Work>

  /// What a submission did.
  @usableFromInline
  struct Submission {
    @usableFromInline var ticket: DelayTicket
    /// The submission started a burst.
    @usableFromInline var started = false
    /// The leading run of a burst that started, to run before anything decided later.
    @usableFromInline var leading: DecidedRun<Work>?
    @usableFromInline var timer: TimerRequest?
    /// `timer` replaces a live timer, which is now stale.
    @usableFromInline var replacedLiveTimer = false
    /// The burst's record, when tasks await a ticket that this submission preempted.
    @usableFromInline var preempted: BurstRecord?
    /// The submission reached `maxSubmissions`: the burst ended, as a flush ends it.
    @usableFromInline var completed: (run: DecidedRun<Work>?, closing: BurstClosing)?

    @inlinable
    init(
      ticket: DelayTicket, started: Bool = false, timer: TimerRequest? = nil,
      replacedLiveTimer: Bool = false, preempted: BurstRecord? = nil
    ) {
      self.ticket = ticket
      self.started = started
      self.timer = timer
      self.replacedLiveTimer = replacedLiveTimer
      self.preempted = preempted
    }
  }

  @usableFromInline var machine: Machine
  @usableFromInline var ledger: TicketLedger

  @inlinable
  init(work: Work?, reportsPreemptionAlways: Bool = false, keepsAll: Bool = false) {
    machine = Machine(work: work)
    ledger = TicketLedger(reportsAlways: reportsPreemptionAlways, keepsAll: keepsAll)
  }

  /// With `combine`: takes the pending burst's value out, for the shell to merge the next
  /// submission into outside its lock; `nil` when nothing is pending or the burst has only its
  /// leading submission (the trailing value starts afresh). The machine has no value until the
  /// next ``delay(at:until:work:rules:ids:owner:)`` gives it the merged one.
  @inlinable
  mutating func takeValueToCombine() -> Work? {
    guard let burst = machine.burst, burst.hasTrailingSubmission else { return nil }
    return machine.lastWork.take()
  }

  @inlinable var isPending: Bool { machine.isPending }

  @inlinable @inline(__always)  // every shell's hot path: keep it specialised, never generic
  mutating func delay(
    at now: Tick, until requested: Tick, work: Work?, rules: BurstRules, ids: inout BurstIDs,
    owner: AnyObject
  ) -> Submission {
    let hadTimer = machine.liveTimer != nil
    switch machine.delay(at: now, until: requested, work: work, rules: rules, ids: &ids) {
    case .rejected:
      return Submission(ticket: DelayTicket(resolved: .cancelled))
    case .joined(let seq, let timer):
      let (ticket, preempted) = ledger.join(seq: seq)
      return Submission(
        ticket: ticket, timer: timer, replacedLiveTimer: hadTimer && timer != nil,
        preempted: preempted)
    case .started(let seq, let timer, let leading):
      let ticket = ledger.begin(seq: seq, leading: leading != nil, owner: owner)
      var submission = Submission(
        ticket: ticket, started: true, timer: timer, replacedLiveTimer: hadTimer && timer != nil)
      if let leading, let record = ledger.current {
        submission.leading = DecidedRun(work: leading, record: record, isLeading: true)
      }
      return submission
    case .completed(let seq, let started, let leading, let run, let end):
      var submission: Submission
      if started {
        submission = Submission(
          ticket: ledger.begin(seq: seq, leading: leading != nil, owner: owner), started: true)
        if let leading, let record = ledger.current {
          submission.leading = DecidedRun(work: leading, record: record, isLeading: true)
        }
      } else {
        let (ticket, preempted) = ledger.join(seq: seq)
        submission = Submission(ticket: ticket, preempted: preempted)
      }
      submission.completed = ended(run, end)
      return submission
    }
  }

  /// A submission to the pending burst: the single shells' hot path, kept apart from the start
  /// of a burst so that it moves no run, record or flags it does not need.
  @inlinable @inline(__always)
  mutating func join(
    at now: Tick, until requested: Tick, work: Work?, rules: BurstRules, ids: inout BurstIDs
  ) -> (ticket: DelayTicket, timer: TimerRequest?, preempted: BurstRecord?) {
    let (seq, timer) = machine.join(
      at: now, until: requested, work: work, rules: rules, ids: &ids)
    let (ticket, preempted) = ledger.join(seq: seq)
    return (ticket, timer, preempted)
  }

  /// The timer named `generation` fired at `now`; an ended burst becomes a run and a closing
  /// through ``ended(_:_:)``.
  @inlinable
  mutating func timerFired(
    at now: Tick, generation: UInt64, ids: inout BurstIDs
  ) -> Machine.FireAction {
    machine.timerFired(at: now, generation: generation, ids: &ids)
  }

  /// Ends the pending burst by running its task; `nil` when idle.
  @inlinable
  mutating func flush() -> (run: DecidedRun<Work>?, closing: BurstClosing)? {
    machine.flush().map { ended($0.0, $0.1) }
  }

  /// Ends the pending burst without running it; `nil` when idle.
  @inlinable
  mutating func cancel() -> BurstClosing? {
    machine.cancel().map {
      BurstClosing(record: ledger.end(), lastSeq: $0.lastSeq, cancelled: true)
    }
  }

  /// Cancels the pending burst and forgets the task.
  @inlinable
  mutating func release() -> BurstClosing? {
    machine.release().map {
      BurstClosing(record: ledger.end(), lastSeq: $0.lastSeq, cancelled: true)
    }
  }

  /// Forgets the task given last (keyed: an idle key keeps no value).
  @inlinable
  mutating func forgetWork() {
    machine.forgetWork()
  }

  /// Brings `record` up to date if it belongs to the pending burst.
  @inlinable
  mutating func synchronize(_ record: BurstRecord) {
    ledger.synchronize(record, lastSeq: machine.burst?.lastSeq)
  }

  @inlinable
  mutating func ended(_ work: Work?, _ end: Machine.BurstEnd) -> (
    run: DecidedRun<Work>?, closing: BurstClosing
  ) {
    let record = ledger.end()
    let run = work.map { DecidedRun(work: $0, record: record, isLeading: false) }
    return (run, BurstClosing(record: record, lastSeq: end.lastSeq, cancelled: false))
  }
}

/// A task the driver decided to run, with the ticket to resolve once it has returned.
@usableFromInline
struct DecidedRun<Work: Sendable>: Sendable {
  @usableFromInline let work: Work
  @usableFromInline let record: BurstRecord
  /// The leading run of its burst, rather than the run that ends it.
  @usableFromInline let isLeading: Bool
  /// A newer burst made this run stale before it started (`cancelsRunningTask`): it starts in
  /// a cancelled task.
  @usableFromInline var isStale = false

  @inlinable
  init(work: Work, record: BurstRecord, isLeading: Bool) {
    self.work = work
    self.record = record
    self.isLeading = isLeading
  }

  /// Resolves the run's submission as `.executed`; call once the task has returned.
  @inlinable
  func resolve() {
    if isLeading { record.finishLeading() } else { record.finish(.executed) }
  }
}

/// The end of a burst, as its tickets learn it: every submission but `lastSeq` (and a leading
/// one) is preempted; `lastSeq` resolves `.cancelled` now, or `.executed` once its run returns.
@usableFromInline
struct BurstClosing: Sendable {
  @usableFromInline let record: BurstRecord
  @usableFromInline let lastSeq: UInt64?
  @usableFromInline let cancelled: Bool

  @inlinable
  init(record: BurstRecord, lastSeq: UInt64?, cancelled: Bool) {
    self.record = record
    self.lastSeq = lastSeq
    self.cancelled = cancelled
  }

  /// Resolves the tickets; call outside any lock, since it resumes their waiters.
  @inlinable
  func apply() {
    if cancelled {
      record.closeCancelled(lastSeq: lastSeq)
    } else {
      record.close(lastSeq: lastSeq)
    }
  }
}
