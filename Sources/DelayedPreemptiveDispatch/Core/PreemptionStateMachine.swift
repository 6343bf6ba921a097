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

    @inlinable
    init(lastSeq: UInt64?) {
      self.lastSeq = lastSeq
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
    /// The submission reached `maxSubmissions` (it started the burst when `started`, and then
    /// `leading` runs first): the burst ended at once, running `run` if present, as a flush.
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
    @usableFromInline var quietDeadline: Tick
    /// `Tick(nanoseconds: .max)` ("never") when the burst has no `maxWait`.
    @usableFromInline var maxWaitDeadline: Tick
    /// Submissions so far, the leading one included (`maxSubmissions`).
    @usableFromInline var submissions: UInt32 = 1
    /// The burst has a submission after its leading one (`leading` option), or had none: its
    /// end runs or cancels `lastSeq`.
    @usableFromInline var hasTrailingSubmission: Bool

    @inlinable
    init(lastSeq: UInt64, leading: Bool, quietDeadline: Tick, maxWaitDeadline: Tick?) {
      self.lastSeq = lastSeq
      self.quietDeadline = quietDeadline
      self.maxWaitDeadline = maxWaitDeadline ?? Tick(nanoseconds: .max)
      hasTrailingSubmission = !leading
    }

    @inlinable
    var deadline: Tick { min(quietDeadline, maxWaitDeadline) }

    /// A submission `seq` joined the burst.
    @inlinable @inline(__always)
    mutating func join(_ seq: UInt64) {
      lastSeq = seq
      hasTrailingSubmission = true
    }
  }

  // Declared widest first, so that the keyed driver's per-key state packs tightly.
  @usableFromInline var burst: Burst?
  /// The earliest timer armed and not yet fired; while a burst is pending, the one that serves
  /// it. Never nil while a burst is pending.
  @usableFromInline var liveTimer: TimerRequest?
  /// The task given last, at init or by a submission; `work: nil` reuses it.
  @usableFromInline var lastWork: Work?

  @inlinable
  init(work: Work?) {
    lastWork = work
  }

  @inlinable var isPending: Bool { burst != nil }

  /// A submission at `now` that asks to run no earlier than `requested`; an instant before
  /// `now` means "due now".
  @inlinable
  mutating func delay(
    at now: Tick, until requested: Tick, work: Work?, rules: BurstRules, ids: inout BurstIDs
  ) -> DelayAction {
    if let work { lastWork = work }
    guard lastWork != nil else { return .rejected }
    let seq = ids.nextSequence()
    let requested = max(requested, now)
    guard var burst else {
      let burst = Burst(
        lastSeq: seq, leading: rules.leading, quietDeadline: requested,
        maxWaitDeadline: rules.maxWaitNanoseconds.map { now.advanced(byNanoseconds: $0) })
      self.burst = burst
      let leading = rules.leading ? lastWork : nil
      if rules.maxSubmissions == 1 { return complete(burst, seq: seq, started: true, leading) }
      let adopts = liveTimer.map { $0.deadline <= burst.deadline } ?? false
      return .started(
        seq: seq, timer: adopts ? nil : arm(burst.deadline, ids: &ids), leading: leading)
    }
    burst.join(seq)
    burst.submissions &+= 1
    if let maxSubmissions = rules.maxSubmissions, burst.submissions >= maxSubmissions {
      return complete(burst, seq: seq, started: false, nil)
    }
    return .joined(seq: seq, timer: move(&burst, until: requested, rules: rules, ids: &ids))
  }

  /// A submission to the pending burst when no `maxSubmissions` can end it: the rules of
  /// ``delay(at:until:work:rules:ids:)`` for that case, without building its action (the single
  /// shells' hot path). Returns the submission's number and the timer to arm, if any.
  ///
  /// - Precondition: a burst is pending, and `rules.maxSubmissions` is `nil`.
  @inlinable @inline(__always)
  mutating func join(
    at now: Tick, until requested: Tick, work: Work?, rules: BurstRules, ids: inout BurstIDs
  ) -> (seq: UInt64, timer: TimerRequest?) {
    if let work { lastWork = work }
    let seq = ids.nextSequence()
    guard var burst else {
      preconditionFailure("Internal inconsistency: a submission joined no pending burst")
    }
    burst.join(seq)  // `submissions` is not counted: no `maxSubmissions` reads it
    return (seq, move(&burst, until: max(requested, now), rules: rules, ids: &ids))
  }

  /// Moves the pending burst's deadline for a submission that asks for `requested` (not before
  /// now) under the deadline policy, stores the burst, and returns the timer to arm, if any.
  @inlinable @inline(__always)
  mutating func move(
    _ burst: inout Burst, until requested: Tick, rules: BurstRules, ids: inout BurstIDs
  ) -> TimerRequest? {
    switch rules.deadlinePolicy {
    case .extend: burst.quietDeadline = max(burst.quietDeadline, requested)
    case .restart: burst.quietDeadline = requested
    }
    self.burst = burst
    // The live timer fires early and re-arms when the deadline moved later; it is replaced only
    // when the deadline moved earlier by more than the tolerance.
    if let armed = liveTimer?.deadline, burst.deadline < armed,
      burst.deadline.advanced(byNanoseconds: rules.toleranceNanoseconds) < armed
    {
      return arm(burst.deadline, ids: &ids)
    }
    return nil
  }

  /// The timer named `generation` fired at `now`.
  @inlinable
  mutating func timerFired(at now: Tick, generation: UInt64, ids: inout BurstIDs) -> FireAction {
    guard generation == liveTimer?.generation else { return .stale }
    liveTimer = nil
    // The burst it was armed for ended: nothing to do, and nothing in flight any more.
    guard let burst else { return .stale }
    if now < burst.deadline { return .rearm(arm(burst.deadline, ids: &ids)) }
    return endWithRun(burst)
  }

  /// Ends the pending burst by running its task now; `nil` when idle.
  @inlinable
  mutating func flush() -> (Work?, BurstEnd)? {
    guard let burst else { return nil }
    guard case .ended(let work, let end) = endWithRun(burst) else {
      preconditionFailure("Internal inconsistency: flush() of \(burst) did not end it")
    }
    return (work, end)
  }

  /// Ends the pending burst without running it; `nil` when idle.
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

  @inlinable
  mutating func endWithRun(_ burst: Burst) -> FireAction {
    // The burst ends; the live timer stays in flight, for a later burst to adopt.
    self.burst = nil
    guard burst.hasTrailingSubmission else { return .ended(nil, BurstEnd(lastSeq: nil)) }
    guard let lastWork else {
      preconditionFailure("Internal inconsistency: burst \(burst) has no task to run")
    }
    return .ended(lastWork, BurstEnd(lastSeq: burst.lastSeq))
  }

  /// `maxSubmissions` reached: the burst ends at once, as a flush would end it; its live timer
  /// stays in flight, for a later burst to adopt. Kept out of line: the submissions that do not
  /// complete a burst are the hot path.
  @inlinable @inline(never)
  mutating func complete(
    _ burst: Burst, seq: UInt64, started: Bool, _ leading: Work?
  ) -> DelayAction {
    guard case .ended(let run, let end) = endWithRun(burst) else {
      preconditionFailure("Internal inconsistency: completing \(burst) did not end it")
    }
    return .completed(seq: seq, started: started, leading: leading, run: run, end: end)
  }

  @inlinable
  mutating func arm(_ deadline: Tick, ids: inout BurstIDs) -> TimerRequest {
    let timer = TimerRequest(deadline: deadline, generation: ids.nextGeneration())
    liveTimer = timer
    return timer
  }
}

extension PreemptionStateMachine: Sendable where Work: Sendable {}

/// A timer a driver must arm: report it fired, with its generation, once `deadline` is reached.
@usableFromInline
struct TimerRequest: Equatable, Sendable {
  @usableFromInline var deadline: Tick
  @usableFromInline var generation: UInt64

  @inlinable
  init(deadline: Tick, generation: UInt64) {
    self.deadline = deadline
    self.generation = generation
  }
}

/// The rules every burst of an instance shares: its ``DelayOptions``, converted once.
@usableFromInline
struct BurstRules: Sendable {
  @usableFromInline let deadlinePolicy: DeadlinePolicy
  /// `maxWait` in nanoseconds, negative values as zero; `nil` for no bound.
  @usableFromInline let maxWaitNanoseconds: Int64?
  @usableFromInline let leading: Bool
  /// `tolerance` in nanoseconds, with `nil` and negative values as zero.
  @usableFromInline let toleranceNanoseconds: Int64
  /// `tolerance` as given, for the clocks that take one.
  @usableFromInline let tolerance: Duration?
  /// `maxSubmissions`; `nil` for no bound.
  @usableFromInline let maxSubmissions: UInt32?

  /// - Precondition: `options.maxSubmissions`, when given, is at least 1.
  @usableFromInline
  init(_ options: DelayOptions) {
    if let maxSubmissions = options.maxSubmissions {
      DelayOptions.requireValid(maxSubmissions: maxSubmissions)
    }
    self.maxSubmissions = options.maxSubmissions.map { UInt32(clamping: $0) }
    deadlinePolicy = options.deadlinePolicy
    maxWaitNanoseconds = options.maxWait.map { max($0.saturatingNanoseconds, 0) }
    leading = options.leading
    toleranceNanoseconds = max(options.tolerance?.saturatingNanoseconds ?? 0, 0)
    tolerance = options.tolerance
  }
}

/// The counters that name submissions and timers. A keyed instance keeps one set for all its
/// keys, so that a timer armed for a key's earlier burst can never pass for a later one's.
@usableFromInline
struct BurstIDs: Sendable {
  @usableFromInline var sequence: UInt64 = 0
  @usableFromInline var generation: UInt64 = 0

  @inlinable
  mutating func nextSequence() -> UInt64 {
    defer { sequence &+= 1 }
    return sequence
  }

  @inlinable
  mutating func nextGeneration() -> UInt64 {
    generation &+= 1
    return generation
  }
}
