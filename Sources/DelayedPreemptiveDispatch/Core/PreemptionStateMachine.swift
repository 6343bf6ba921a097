/// Every rule of delayed preemptive dispatch, with no clock, queue or lock.
///
/// Instants come in as arguments and actions go out as return values; the shells
/// (``DelayedPreemptiveDispatchQueue`` and ``DelayedPreemptiveActor``) perform the actions. The
/// machine owns the single timer of an instance: `liveTimer` is the earliest timer armed and not
/// yet fired, and its generation names it, so a timer that fires with any other generation is
/// stale and does nothing. The live timer outlives the burst it was armed for: a later burst
/// whose deadline is no earlier adopts it (it fires early and re-arms for the remainder), so a
/// loop of `delay` and `cancel` keeps one timer in flight instead of one per burst.
///
/// Sequence numbers identify submissions. A burst ends in one of three ways, each reported as a
/// ``BurstEnd``: its timer finds the deadline reached, `flush()`, or `cancel()`.
///
/// `Work` should be a struct or class, not a bare closure type: a closure stored as a generic
/// value is kept in its most general form, which costs an allocation per store.
struct PreemptionStateMachine<Instant: InstantProtocol, Work> where Instant.Duration == Duration {
  /// A timer the shell must arm: call ``timerFired(at:generation:)`` once `deadline` is reached.
  struct TimerRequest: Equatable {
    var deadline: Instant
    var generation: UInt64
  }

  /// How the submissions of an ended burst resolve.
  struct BurstEnd: Equatable {
    /// The submission that runs or is cancelled at the end; `nil` when the burst only had its
    /// leading submission. Every other submission of the burst except the leading one was
    /// preempted.
    var lastSeq: UInt64?
  }

  enum DelayAction {
    /// No task was ever given: the submission resolves `.cancelled` and nothing changes.
    case rejected
    /// The submission started a burst: arm `timer` if present (else the live timer was
    /// adopted), and run `leading` at once if present.
    case started(seq: UInt64, timer: TimerRequest?, leading: Work?)
    /// The submission joined the pending burst, preempting `preempted`; arm `timer` if present.
    case joined(seq: UInt64, preempted: UInt64?, timer: TimerRequest?)
  }

  enum FireAction {
    /// The timer is not the live one: do nothing.
    case stale
    /// The deadline moved later: arm for the remainder.
    case rearm(TimerRequest)
    /// The deadline is reached: run `work`, then resolve `end` as executed.
    case run(Work, BurstEnd)
    /// The deadline is reached by a burst that had only its leading submission.
    case end(BurstEnd)
  }

  enum FlushAction {
    case idle
    case run(Work, BurstEnd)
    case end(BurstEnd)
  }

  struct Burst {
    var firstSeq: UInt64
    var lastSeq: UInt64
    /// The submission whose task ran at the start of the burst (`leading` option).
    var leadingSeq: UInt64?
    var quietDeadline: Instant
    var maxWaitDeadline: Instant?

    var deadline: Instant {
      guard let maxWaitDeadline, maxWaitDeadline < quietDeadline else { return quietDeadline }
      return maxWaitDeadline
    }

    var hasTrailingSubmission: Bool { lastSeq != leadingSeq }
  }

  let options: DelayOptions
  /// `options.tolerance`, with `nil` and negative values as zero.
  private let tolerance: Duration
  /// The task given last, at init or by a submission; `task: nil` reuses it.
  private(set) var lastWork: Work?
  private(set) var burst: Burst?
  /// The earliest timer armed and not yet fired; while a burst is pending, the one that serves
  /// it. Never nil while a burst is pending.
  private(set) var liveTimer: TimerRequest?
  private var nextSeq: UInt64 = 0
  private var generation: UInt64 = 0

  init(options: DelayOptions, work: Work?) {
    self.options = options
    tolerance = max(options.tolerance ?? .zero, .zero)
    lastWork = work
  }

  var isPending: Bool { burst != nil }

  /// A submission at `now` that asks to run no earlier than `requested`; an instant before
  /// `now` means "due now".
  mutating func delay(at now: Instant, until requested: Instant, work: Work?) -> DelayAction {
    if let work { lastWork = work }
    guard lastWork != nil else { return .rejected }
    let seq = nextSeq
    nextSeq &+= 1
    let requested = max(requested, now)
    guard var burst else {
      let maxWaitDeadline = options.maxWait.map { now.advanced(by: max($0, .zero)) }
      let burst = Burst(
        firstSeq: seq, lastSeq: seq, leadingSeq: options.leading ? seq : nil,
        quietDeadline: requested, maxWaitDeadline: maxWaitDeadline)
      self.burst = burst
      let adopts = liveTimer.map { $0.deadline <= burst.deadline } ?? false
      return .started(
        seq: seq, timer: adopts ? nil : arm(burst.deadline),
        leading: options.leading ? lastWork : nil)
    }
    let preempted = burst.hasTrailingSubmission ? burst.lastSeq : nil
    burst.lastSeq = seq
    switch options.deadlinePolicy {
    case .extend: burst.quietDeadline = max(burst.quietDeadline, requested)
    case .restart: burst.quietDeadline = requested
    }
    self.burst = burst
    // The live timer fires early and re-arms when the deadline moved later; it is replaced only
    // when the deadline moved earlier by more than the tolerance.
    var timer: TimerRequest?
    if let armed = liveTimer?.deadline, burst.deadline < armed,
      burst.deadline.advanced(by: tolerance) < armed
    {
      timer = arm(burst.deadline)
    }
    return .joined(seq: seq, preempted: preempted, timer: timer)
  }

  /// The timer named `generation` fired at `now`.
  mutating func timerFired(at now: Instant, generation: UInt64) -> FireAction {
    guard generation == liveTimer?.generation else { return .stale }
    liveTimer = nil
    // The burst it was armed for ended: nothing to do, and nothing in flight any more.
    guard let burst else { return .stale }
    if now < burst.deadline { return .rearm(arm(burst.deadline)) }
    return endWithRun(burst)
  }

  /// Ends the pending burst by running its task now.
  mutating func flush() -> FlushAction {
    guard let burst else { return .idle }
    switch endWithRun(burst) {
    case .run(let work, let end): return .run(work, end)
    case .end(let end): return .end(end)
    case .stale, .rearm: preconditionFailure("Internal inconsistency: flush() of \(burst)")
    }
  }

  /// Ends the pending burst without running it; `nil` when idle.
  mutating func cancel() -> BurstEnd? {
    guard let burst else { return nil }
    endBurst()
    return BurstEnd(lastSeq: burst.hasTrailingSubmission ? burst.lastSeq : nil)
  }

  /// Cancels the pending burst and forgets the task, so that nothing the task captured is kept.
  mutating func release() -> BurstEnd? {
    lastWork = nil
    return cancel()
  }

  private mutating func endWithRun(_ burst: Burst) -> FireAction {
    endBurst()
    guard burst.hasTrailingSubmission else { return .end(BurstEnd(lastSeq: nil)) }
    guard let lastWork else {
      preconditionFailure("Internal inconsistency: burst \(burst) has no task to run")
    }
    return .run(lastWork, BurstEnd(lastSeq: burst.lastSeq))
  }

  /// Ends the burst; the live timer stays in flight, for a later burst to adopt.
  private mutating func endBurst() {
    burst = nil
  }

  private mutating func arm(_ deadline: Instant) -> TimerRequest {
    generation &+= 1
    let timer = TimerRequest(deadline: deadline, generation: generation)
    liveTimer = timer
    return timer
  }
}

extension PreemptionStateMachine: Sendable where Work: Sendable {}
extension PreemptionStateMachine.Burst: Sendable {}
