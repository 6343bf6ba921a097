/// Every rule of one burst line (one queue, one actor, or one key of a keyed instance), with no
/// clock, queue or lock.
///
/// Instants come in as arguments and actions go out as return values; the ``BurstDriver`` turns
/// them into effects. The rules that are the same for every key (``BurstRules``) and the
/// counters that must be unique across keys (``BurstIDs``) are passed in, so that a keyed
/// instance stores only what differs per key.
///
/// The machine owns the single timer of its line: `liveTimer` is the earliest timer armed and
/// not yet fired, and its generation names it, so a timer that fires with any other generation
/// is stale and does nothing. The live timer outlives the burst it was armed for: a later burst
/// whose deadline is no earlier adopts it (it fires early and re-arms for the remainder), so a
/// loop of `delay` and `cancel` keeps one timer in flight instead of one per burst.
///
/// `Work` should be a struct or class, not a bare closure type: a closure stored as a generic
/// value is kept in its most general form, which costs an allocation per store.
@usableFromInline
struct PreemptionStateMachine<Work> {
  /// How the submissions of an ended burst resolve.
  @usableFromInline
  struct BurstEnd: Equatable, Sendable {
    /// The submission that runs or is cancelled at the end; `nil` when the burst only had its
    /// leading submission. Every other submission of the burst except the leading one was
    /// preempted.
    @usableFromInline var lastSeq: UInt64?
    /// With `minimumSpacing`: the instant the burst's run may start, when later than its end
    /// (a burst that reached `maxSubmissions` before the spacing allowed its run); `nil`: at
    /// once.
    @usableFromInline var runStartsAt: TimelineInstant?

    @inlinable
    init(lastSeq: UInt64?, runStartsAt: TimelineInstant? = nil) {
      self.lastSeq = lastSeq
      self.runStartsAt = runStartsAt
    }
  }

  @usableFromInline
  enum DelayAction {
    /// No task was ever given: the submission resolves `.cancelled` and nothing changes.
    case rejected
    /// The submission started a burst: run `leading` at once if present, then arm `timer` if
    /// present (else the live timer was adopted).
    case started(seq: UInt64, timer: TimerRequest?, leading: Work?)
    /// The submission joined the pending burst, preempting every earlier non-leading one; arm
    /// `timer` if present.
    case joined(seq: UInt64, timer: TimerRequest?)
    /// The submission reached `maxSubmissions`, or made its burst due at the current instant
    /// (it started the burst when `started`, and then `leading` runs first): the burst ended at
    /// once, running `run` if present, as a flush.
    case completed(seq: UInt64, started: Bool, leading: Work?, run: Work?, end: BurstEnd)
  }

  @usableFromInline
  enum FireAction {
    /// The timer is not the live one: do nothing.
    case stale
    /// The deadline moved later: arm for the remainder.
    case rearm(TimerRequest)
    /// The deadline is reached: run `work` (nil for a burst that had only its leading
    /// submission), then resolve `end`.
    case ended(Work?, BurstEnd)
  }

  @usableFromInline
  struct Burst: Sendable {
    // No optional fields, and a `Bool` last: an optional burst needs no tag byte of its own
    // (it uses the `Bool`'s spare values), so that a pending key's state in the keyed driver
    // stays small.
    @usableFromInline var lastSeq: UInt64
    @usableFromInline var quietDeadline: TimelineInstant
    /// `TimelineInstant(nanoseconds: .max)` ("never") when the burst has no `maxWait`.
    @usableFromInline var maxWaitDeadline: TimelineInstant
    /// Submissions so far, the leading one included (`maxSubmissions`).
    @usableFromInline var submissions: UInt32 = 1
    /// The burst has a submission after its leading one (`leading` option), or had none: its
    /// end runs or cancels `lastSeq`.
    @usableFromInline var hasTrailingSubmission: Bool

    @inlinable
    init(
      lastSeq: UInt64, leading: Bool, quietDeadline: TimelineInstant,
      maxWaitDeadline: TimelineInstant?
    ) {
      self.lastSeq = lastSeq
      self.quietDeadline = quietDeadline
      self.maxWaitDeadline = maxWaitDeadline ?? TimelineInstant(nanoseconds: .max)
      hasTrailingSubmission = !leading
    }

    @inlinable
    var deadline: TimelineInstant { min(quietDeadline, maxWaitDeadline) }

    /// A submission `seq` joined the burst.
    @inlinable @inline(__always)
    mutating func join(_ seq: UInt64) {
      lastSeq = seq
      hasTrailingSubmission = true
    }
  }

  // The machine's state is its own: other types read and change it through its methods only.
  // (The fields are `@usableFromInline` for the inlinable methods, not for other types.)
  // Declared so that the keyed driver's per-key state packs tightly: the small `lastWork` of a
  // `Void` line fills the optional burst's tail, and the live timer is two plain words (its
  // generation 0 means none) rather than an optional with a tag byte of its own.
  @usableFromInline var burst: Burst?
  /// The task given last, at init or by a submission; `work: nil` reuses it.
  @usableFromInline var lastWork: Work?
  @usableFromInline var liveTimerDeadline = TimelineInstant(nanoseconds: 0)
  /// 0: no timer in flight (generations start at 1).
  @usableFromInline var liveTimerGenerationOrZero: UInt64 = 0
  /// With `minimumSpacing`: the earliest instant the next run may start, the previous run's
  /// start plus the spacing. Stays zero (no constraint) without it.
  @usableFromInline var nextRunStart = TimelineInstant(nanoseconds: 0)

  /// The earliest timer armed and not yet fired; while a burst is pending, the one that serves
  /// it. Never nil while a burst is pending.
  @inlinable var liveTimer: TimerRequest? {
    get {
      liveTimerGenerationOrZero == 0
        ? nil : TimerRequest(deadline: liveTimerDeadline, generation: liveTimerGenerationOrZero)
    }
    set {
      liveTimerDeadline = newValue?.deadline ?? TimelineInstant(nanoseconds: 0)
      liveTimerGenerationOrZero = newValue?.generation ?? 0
    }
  }

  @inlinable
  init(work: Work?) {
    lastWork = work
  }

  @inlinable var isPending: Bool { burst != nil }

  /// The generation of the live timer, if one is in flight.
  @inlinable var liveTimerGeneration: UInt64? { liveTimer?.generation }

  /// The pending burst's last submission, if a burst is pending.
  @inlinable var pendingLastSeq: UInt64? { burst?.lastSeq }

  /// With `combine`: takes the pending burst's value out, to merge the next submission into;
  /// `nil` when nothing is pending or the burst has only its leading submission (the trailing
  /// value starts afresh). The machine has no value until the next submission gives it the
  /// merged one.
  ///
  /// A burst already due at `now` keeps its value: the submission ends it first (T7), so the
  /// merge starts afresh.
  @inlinable
  mutating func takeValueToCombine(at now: TimelineInstant) -> Work? {
    guard let burst, burst.hasTrailingSubmission, now < due(burst) else { return nil }
    return lastWork.take()
  }

  /// The instant the pending burst is due: its deadline, but no sooner than the spacing allows
  /// (T1).
  @inlinable
  func due(_ burst: Burst) -> TimelineInstant {
    max(burst.deadline, nextRunStart)
  }

  /// Whether a submission at `now` joins the pending burst: one is pending and not yet due
  /// (T7), or, for the rules that ask for it (``BurstRules/joinsDueBurst``), pending at all.
  /// Otherwise the submission first ends a burst that is due (``endBurstDue(by:rules:)``), then
  /// starts a new one.
  @inlinable
  func joins(at now: TimelineInstant, rules: BurstRules) -> Bool {
    guard let burst else { return false }
    return now < due(burst) || rules.joinsDueBurst
  }

  /// Ends the pending burst if it is due by `now` but no timer has ended it yet (the timer is
  /// late): it ends exactly as its timer firing at its due instant would have ended it, with
  /// its own task or value, and the spacing counts from that instant (T7). Every submission
  /// does this first, so what runs, and when, depends only on when submissions arrive, never on
  /// how late a timer fires. `nil` when no burst is due.
  @inlinable
  mutating func endBurstDue(by now: TimelineInstant, rules: BurstRules) -> (Work?, BurstEnd)? {
    guard !rules.joinsDueBurst, let burst, due(burst) <= now,
      case .ended(let work, let end) = endWithRun(burst, at: due(burst), rules: rules)
    else { return nil }
    return (work, end)
  }

  /// Whether the spacing has passed by `now` since the previous run's start.
  @inlinable
  func spacingAllowsRun(at now: TimelineInstant) -> Bool {
    nextRunStart <= now
  }

  /// A submission at `now` that asks to run no earlier than `requested`; an instant before
  /// `now` means "due now". A burst that is due at `now` ends at once (T5).
  ///
  /// - Precondition: no pending burst is due by `now`: the submission has ended it first
  ///   (``endBurstDue(by:rules:)``, T7).
  @inlinable @inline(__always)
  mutating func delay(
    at now: TimelineInstant, until requested: TimelineInstant, work: Work?, rules: BurstRules,
    ids: inout BurstIDs
  ) -> DelayAction {
    assert(
      rules.joinsDueBurst || burst.map { now < due($0) } ?? true,
      "a submission joined a burst already due")
    if let work { lastWork = work }
    guard lastWork != nil else { return .rejected }
    let seq = ids.nextSequence()
    let requested = max(requested, now)
    guard var burst else {
      // `leading` runs at once only when no run started within the spacing (T2).
      let leads = rules.leading && spacingAllowsRun(at: now)
      let burst = Burst(
        lastSeq: seq, leading: leads, quietDeadline: requested,
        maxWaitDeadline: rules.maxWaitNanoseconds.map { now.advanced(byNanoseconds: $0) })
      self.burst = burst
      let leading = leads ? lastWork : nil
      if leads { runStarted(at: now, rules: rules) }
      if rules.maxSubmissions == 1 || due(burst) <= now {
        return complete(burst, seq: seq, started: true, leading, at: now, rules: rules)
      }
      let adopts = liveTimer.map { $0.deadline <= due(burst) } ?? false
      return .started(
        seq: seq, timer: adopts ? nil : arm(due(burst), ids: &ids), leading: leading)
    }
    burst.join(seq)
    burst.submissions &+= 1
    moveDeadline(&burst, until: requested, rules: rules)
    if let maxSubmissions = rules.maxSubmissions, burst.submissions >= maxSubmissions {
      return complete(burst, seq: seq, started: false, nil, at: now, rules: rules)
    }
    if due(burst) <= now {
      return complete(burst, seq: seq, started: false, nil, at: now, rules: rules)
    }
    return .joined(seq: seq, timer: timer(for: burst, rules: rules, ids: &ids))
  }

  /// A submission to the pending burst when no `maxSubmissions` can end it: the rules of
  /// ``delay(at:until:work:rules:ids:)`` for that case, without building its action (the shells'
  /// hot path). Returns the submission's number and the timer to arm, if any; `endsNow` when the
  /// submission made the burst due at `now`: the caller then ends it with
  /// ``endDueBurst(at:rules:)`` (no timer was armed for it).
  ///
  /// - Precondition: a burst is pending and not yet due (``joins(at:)``), and
  ///   `rules.maxSubmissions` is `nil`.
  @inlinable @inline(__always)
  mutating func join(
    at now: TimelineInstant, until requested: TimelineInstant, work: Work?, rules: BurstRules,
    ids: inout BurstIDs
  ) -> (seq: UInt64, timer: TimerRequest?, endsNow: Bool) {
    if let work { lastWork = work }
    let seq = ids.nextSequence()
    guard var burst else {
      preconditionFailure("Internal inconsistency: a submission joined no pending burst")
    }
    burst.join(seq)  // `submissions` is not counted: no `maxSubmissions` reads it
    moveDeadline(&burst, until: max(requested, now), rules: rules)
    if due(burst) <= now { return (seq, nil, true) }
    return (seq, timer(for: burst, rules: rules, ids: &ids), false)
  }

  /// Moves the pending burst's deadline for a submission that asks for `requested` (not before
  /// now) under the deadline policy, and stores the burst.
  @inlinable @inline(__always)
  mutating func moveDeadline(
    _ burst: inout Burst, until requested: TimelineInstant, rules: BurstRules
  ) {
    switch rules.deadlinePolicy {
    case .extend: burst.quietDeadline = max(burst.quietDeadline, requested)
    case .restart: burst.quietDeadline = requested
    }
    self.burst = burst
  }

  /// The timer to arm for the pending burst, if any: the live timer fires early and re-arms
  /// when the burst became due later; it is replaced only when the burst became due earlier by
  /// more than the tolerance.
  @inlinable @inline(__always)
  mutating func timer(for burst: Burst, rules: BurstRules, ids: inout BurstIDs) -> TimerRequest? {
    let due = due(burst)
    if let armed = liveTimer?.deadline, due < armed,
      due.advanced(byNanoseconds: rules.toleranceNanoseconds) < armed
    {
      return arm(due, ids: &ids)
    }
    return nil
  }

  /// The timer named `generation` fired at `now`.
  @inlinable
  mutating func timerFired(
    at now: TimelineInstant, generation: UInt64, rules: BurstRules, ids: inout BurstIDs
  ) -> FireAction {
    guard generation == liveTimer?.generation else { return .stale }
    liveTimer = nil
    // The burst it was armed for ended: nothing to do, and nothing in flight any more.
    guard let burst else { return .stale }
    if now < due(burst) { return .rearm(arm(due(burst), ids: &ids)) }
    // A late timer ends the burst as of its due instant, as a submission would (T7).
    return endWithRun(burst, at: due(burst), rules: rules)
  }

  /// Ends the pending burst, which a submission made due at `now` (see
  /// ``join(at:until:work:rules:ids:)``).
  @inlinable
  mutating func endDueBurst(at now: TimelineInstant, rules: BurstRules) -> (Work?, BurstEnd) {
    guard let burst, case .ended(let work, let end) = endWithRun(burst, at: now, rules: rules)
    else {
      preconditionFailure("Internal inconsistency: no due burst to end at \(now)")
    }
    return (work, end)
  }

  /// Ends the pending burst by running its task now, whatever the spacing (T3); `nil` when
  /// idle.
  @inlinable
  mutating func flush(at now: TimelineInstant, rules: BurstRules) -> (Work?, BurstEnd)? {
    guard let burst else { return nil }
    guard case .ended(let work, let end) = endWithRun(burst, at: now, rules: rules) else {
      preconditionFailure("Internal inconsistency: flush() of \(burst) did not end it")
    }
    return (work, end)
  }

  /// Ends the pending burst without running it; `nil` when idle. The spacing still counts from
  /// the previous run's start (T3).
  @inlinable
  mutating func cancel() -> BurstEnd? {
    guard let burst else { return nil }
    self.burst = nil
    return BurstEnd(lastSeq: burst.hasTrailingSubmission ? burst.lastSeq : nil)
  }

  /// Cancels the pending burst and forgets the task, so that nothing the task captured is kept.
  @inlinable
  mutating func release() -> BurstEnd? {
    lastWork = nil
    return cancel()
  }

  /// Forgets the task given last; the keyed drivers do so when a key's burst ends, so that an
  /// idle key keeps no value.
  @inlinable
  mutating func forgetWork() {
    lastWork = nil
  }

  /// A run starts at `instant`: with `minimumSpacing`, the next one may start no sooner than
  /// the spacing after it.
  @inlinable
  mutating func runStarted(at instant: TimelineInstant, rules: BurstRules) {
    guard let spacing = rules.minimumSpacingNanoseconds else { return }
    nextRunStart = instant.advanced(byNanoseconds: spacing)
  }

  @inlinable
  mutating func endWithRun(
    _ burst: Burst, at now: TimelineInstant, rules: BurstRules
  ) -> FireAction {
    // The burst ends; the live timer stays in flight, for a later burst to adopt.
    self.burst = nil
    guard burst.hasTrailingSubmission else { return .ended(nil, BurstEnd(lastSeq: nil)) }
    guard let lastWork else {
      preconditionFailure("Internal inconsistency: burst \(burst) has no task to run")
    }
    runStarted(at: now, rules: rules)
    return .ended(lastWork, BurstEnd(lastSeq: burst.lastSeq))
  }

  /// The burst ended at a submission (`maxSubmissions`, or due now); its live timer stays in
  /// flight, for a later burst to adopt. A burst that reached `maxSubmissions` before the
  /// spacing allows its run is closed now, and its run waits for the spacing (T2). Kept out of
  /// line: the submissions that do not end a burst are the hot path.
  @inlinable @inline(never)
  mutating func complete(
    _ burst: Burst, seq: UInt64, started: Bool, _ leading: Work?, at now: TimelineInstant,
    rules: BurstRules
  ) -> DelayAction {
    let start = max(now, nextRunStart)
    guard case .ended(let run, var end) = endWithRun(burst, at: start, rules: rules) else {
      preconditionFailure("Internal inconsistency: completing \(burst) did not end it")
    }
    if run != nil && start > now { end.runStartsAt = start }
    return .completed(seq: seq, started: started, leading: leading, run: run, end: end)
  }

  @inlinable
  mutating func arm(_ deadline: TimelineInstant, ids: inout BurstIDs) -> TimerRequest {
    let timer = TimerRequest(deadline: deadline, generation: ids.nextGeneration())
    liveTimer = timer
    return timer
  }
}

extension PreemptionStateMachine: Sendable where Work: Sendable {}
