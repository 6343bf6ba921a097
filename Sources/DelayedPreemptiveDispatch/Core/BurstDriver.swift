/// How far ahead a submission asks to run.
@usableFromInline
enum RequestedDelay: Sendable {
  case nanoseconds(Int64)
  /// Converted by the driver, through the cache of the last duration.
  case duration(Duration)
}

/// What a shell must do after an event of a driver, in this order, outside its lock:
/// apply `closing`, cancel `cancelledTimer`, start `runs` runs (taking each with
/// ``BurstDriver/takeRun()``), arm `timer`, then leave its busy state if `becameIdle`.
struct BurstEffects: Sendable {
  var closing: BurstClosing?
  /// Runs decided by this event; the driver queues them in the order they were decided.
  var runs = 0
  var timer: TimerRequest?
  var cancelledTimer: TimerHandle?
  /// The submission started a burst (the actor's `cancelsRunningTask` acts on it).
  var startedBurst = false
  /// Nothing was pending or running before this event, and something is now: enter the busy
  /// state under the lock, before anything can end it.
  var becameBusy = false
  /// Nothing is pending or running any more.
  var becameIdle = false
}

/// The one driver of a single burst line: the machine and its tickets (``BurstSlot``), the
/// counters, the duration cache, the order of runs, the busy count and the live timer's handle.
///
/// Shells keep it under their lock (the queue) or isolation (the actor), feed it events, and
/// perform the ``BurstEffects`` it returns: they say only how to arm a timer and how to run a
/// task. Runs are queued here in the order they are decided, and every shell runs them in that
/// order, so a flushed task can never be overtaken by a later burst's, nor a leading task by its
/// own trailing one, whichever block or task of the shell happens to execute first.
struct BurstDriver<Work: Sendable>: Sendable {
  let rules: BurstRules
  private var ids = BurstIDs()
  private var durations = DurationCache()
  private var slot: BurstSlot<Work>
  /// Runs decided and not yet taken, oldest first.
  private var decided = RunQueue<DecidedRun<Work>>()
  /// The pending burst (0 or 1) plus the runs decided and not yet finished.
  private(set) var outstanding = 0
  /// The handle of the live timer, to cancel when it is replaced or the owner goes away.
  private var liveHandle: (generation: UInt64, handle: TimerHandle)?

  init(options: DelayOptions, work: Work?) {
    rules = BurstRules(options)
    slot = BurstSlot(work: work)
  }

  var isPending: Bool { slot.isPending }

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
    let requested = durations.deadline(after: delay, from: now)
    if slot.isPending {
      let (ticket, timer) = slot.join(
        at: now, until: requested, work: work, rules: rules, ids: &ids)
      if let timer { arm(timer, &effects) }
      return ticket
    }
    let submission = slot.delay(
      at: now, until: requested, work: work, rules: rules, ids: &ids, owner: owner)
    if submission.started {
      effects.startedBurst = true
      effects.becameBusy = outstanding == 0
      outstanding += 1
    }
    if let leading = submission.leading { decide(leading, &effects) }
    if let timer = submission.timer { arm(timer, &effects) }
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
    if liveHandle?.generation == generation { liveHandle = nil }
    switch slot.timerFired(at: now, generation: generation, ids: &ids) {
    case .stale: break
    case .rearm(let timer): arm(timer, &effects)
    case .ended(let run, let closing): end(run, closing, &effects)
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
    effects.cancelledTimer = liveHandle.take()?.handle
    return effects
  }

  /// The next decided run, in the order runs were decided.
  mutating func takeRun() -> DecidedRun<Work> {
    guard let run = decided.popFirst() else {
      preconditionFailure("Internal inconsistency: a run was started that was never decided")
    }
    return run
  }

  /// A run taken with ``takeRun()`` has returned and resolved its ticket; returns whether the
  /// line is now idle.
  mutating func runFinished() -> Bool {
    outstanding -= 1
    return outstanding == 0
  }

  /// Keeps `handle` as the live timer's, or returns it to be cancelled when the timer it arms
  /// is no longer live (it fired, or was replaced, before the shell got here).
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    guard slot.machine.liveTimer?.generation == generation else { return handle }
    let replaced = liveHandle?.handle
    liveHandle = (generation, handle)
    return replaced
  }

  mutating func synchronize(_ record: BurstRecord) {
    slot.synchronize(record)
  }

  private mutating func decide(_ run: DecidedRun<Work>, _ effects: inout BurstEffects) {
    decided.append(run)
    outstanding += 1
    effects.runs += 1
  }

  private mutating func arm(_ timer: TimerRequest, _ effects: inout BurstEffects) {
    effects.timer = timer
    effects.cancelledTimer = liveHandle.take()?.handle
  }

  private mutating func end(
    _ run: DecidedRun<Work>?, _ closing: BurstClosing, _ effects: inout BurstEffects
  ) {
    effects.closing = closing
    if let run { decide(run, &effects) }
    outstanding -= 1
    effects.becameIdle = outstanding == 0
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
