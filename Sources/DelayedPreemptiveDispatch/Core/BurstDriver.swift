/// How far ahead a submission asks to run.
@usableFromInline
enum RequestedDelay: Sendable {
  case nanoseconds(Int64)
  /// Converted by the driver, through the cache of the last duration.
  case duration(Duration)
}

/// The one driver of a single burst line: the machine and its tickets (``BurstSlot``) and the
/// shared bookkeeping (``BurstBook``: counters, duration cache, busy count, run order, timer).
///
/// Shells keep it under their lock (the queue) or isolation (the actor), feed it events, and
/// perform the ``BurstEffects`` it returns with the one interpreter: they say only how to arm a
/// timer and how to run a task. Runs are queued here in the order they are decided, and every
/// shell runs them in that order, so a flushed task can never be overtaken by a later burst's,
/// nor a leading task by its own trailing one, whichever block or task of the shell happens to
/// execute first.
struct BurstDriver<Work: Sendable>: Sendable {
  let rules: BurstRules
  private var book = BurstBook<DecidedRun<Work>>()
  private var slot: BurstSlot<Work>

  init(options: DelayOptions, work: Work?) {
    rules = BurstRules(options)
    slot = BurstSlot(work: work)
  }

  var isPending: Bool { slot.isPending }

  /// The pending burst (0 or 1) plus the runs decided and not yet finished.
  var outstanding: Int { book.outstanding }

  /// The machine, for tests.
  var machine: PreemptionStateMachine<Work> { slot.machine }

  /// A submission; what the shell must do afterwards goes into `effects`, which the caller
  /// keeps outside its lock (returning it with the ticket would copy it through the lock's
  /// generic result on every call).
  @inline(__always)  // the queue's hot path: keep it specialised, never generic
  mutating func delay(
    _ delay: RequestedDelay, now: Tick, work: Work?, owner: any TicketOwner,
    effects: inout BurstEffects
  ) -> DelayTicket {
    let requested = book.durations.deadline(after: delay, from: now)
    if slot.isPending && rules.maxSubmissions == nil {
      let (ticket, timer, preempted) = slot.join(
        at: now, until: requested, work: work, rules: rules, ids: &book.ids)
      effects.preempted = preempted
      if let timer { book.arm(timer, &effects) }
      return ticket
    }
    return submit(at: now, until: requested, work: work, owner: owner, effects: &effects)
  }

  /// A submission that starts a burst, or may end one (`maxSubmissions`): kept out of line, so
  /// that the hot path above stays small.
  @inline(never)
  private mutating func submit(
    at now: Tick, until requested: Tick, work: Work?, owner: any TicketOwner,
    effects: inout BurstEffects
  ) -> DelayTicket {
    let submission = slot.delay(
      at: now, until: requested, work: work, rules: rules, ids: &book.ids, owner: owner)
    effects.preempted = submission.preempted
    if submission.started { book.burstStarted(&effects) }
    if let leading = submission.leading { decide(leading, &effects) }
    if let timer = submission.timer { book.arm(timer, &effects) }
    if let (run, closing) = submission.completed { end(run, closing, &effects) }
    return submission.ticket
  }

  /// A submission, returning its ticket and effects together.
  mutating func delay(
    _ delay: RequestedDelay, now: Tick, work: Work?, owner: any TicketOwner
  ) -> (DelayTicket, BurstEffects) {
    var effects = BurstEffects()
    let ticket = self.delay(delay, now: now, work: work, owner: owner, effects: &effects)
    return (ticket, effects)
  }

  mutating func timerFired(at now: Tick, generation: UInt64) -> BurstEffects {
    var effects = BurstEffects()
    _ = book.fired(generation: generation)
    switch slot.timerFired(at: now, generation: generation, ids: &book.ids) {
    case .stale: break
    case .rearm(let timer): book.arm(timer, &effects)
    case .ended(let work, let burstEnd):
      let (run, closing) = slot.ended(work, burstEnd)
      end(run, closing, &effects)
    }
    return effects
  }

  mutating func flush() -> BurstEffects {
    var effects = BurstEffects()
    if let (run, closing) = slot.flush() { end(run, closing, &effects) }
    return effects
  }

  mutating func cancel() -> BurstEffects {
    var effects = BurstEffects()
    if let closing = slot.cancel() { end(nil, closing, &effects) }
    return effects
  }

  /// The owner is going away: cancel the pending burst, forget the task, stop the timer.
  mutating func release() -> BurstEffects {
    var effects = BurstEffects()
    if let closing = slot.release() { end(nil, closing, &effects) }
    book.disarm(&effects)
    return effects
  }

  /// The next decided run, in the order runs were decided.
  mutating func takeRun() -> DecidedRun<Work> {
    guard let run = book.ready.popFirst() else {
      preconditionFailure("Internal inconsistency: a run was started that was never decided")
    }
    return run
  }

  /// A run taken with ``takeRun()`` has returned and resolved its ticket; returns whether the
  /// line is now idle.
  mutating func runFinished() -> Bool {
    book.runFinished()
  }

  /// Keeps `handle` as the live timer's, or returns the handle to cancel.
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    book.install(handle, generation: generation)
  }

  mutating func synchronize(_ record: BurstRecord) {
    slot.synchronize(record)
  }

  private mutating func decide(_ run: DecidedRun<Work>, _ effects: inout BurstEffects) {
    book.ready.append(run)
    book.runDecided()
    effects.starts += 1
  }

  private mutating func end(
    _ run: DecidedRun<Work>?, _ closing: BurstClosing, _ effects: inout BurstEffects
  ) {
    effects.closing = closing
    if let run { decide(run, &effects) }
    book.burstEnded(&effects)
  }
}

/// A first-in, first-out queue that reuses its storage: amortised O(1) at both ends.
@usableFromInline
struct RunQueue<Element> {
  @usableFromInline var elements: [Element?] = []
  @usableFromInline var head = 0

  @inlinable
  init() {}

  @inlinable var isEmpty: Bool { head == elements.count }
  @inlinable var count: Int { elements.count - head }

  @inlinable
  mutating func append(_ element: Element) {
    elements.append(element)
  }

  @inlinable
  mutating func popFirst() -> Element? {
    guard head < elements.count else { return nil }
    let element = elements[head].take()
    head += 1
    if head == elements.count {
      // Drained: keep a small buffer for reuse, give a large one back.
      elements.removeAll(keepingCapacity: elements.capacity <= 64)
      head = 0
    } else if head >= 64, head * 2 >= elements.count {
      elements = Array(elements[head...])
      head = 0
    }
    return element
  }
}

extension RunQueue: Sendable where Element: Sendable {}
