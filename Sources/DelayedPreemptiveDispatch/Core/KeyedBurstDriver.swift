/// What a keyed shell must do after an event, outside its lock and in this order: apply the
/// closings, cancel `cancelledTimer`, start `workers` workers, arm `timer`, then leave its busy
/// state if `becameIdle`.
@usableFromInline
struct KeyedEffects: Sendable {
  @usableFromInline var closing: BurstClosing?
  /// The closings of an event that ended many bursts (a timer firing, `cancelAll`, `flushAll`).
  @usableFromInline var closings: [BurstClosing] = []
  /// Worker loops to start: each takes due runs with ``KeyedBurstDriver/nextRuns(finishing:)``
  /// until there are none.
  @usableFromInline var workers = 0
  @usableFromInline var timer: TimerRequest?
  @usableFromInline var cancelledTimer: TimerHandle?
  /// The submission started a burst of its key.
  @usableFromInline var startedBurst = false
  @usableFromInline var becameBusy = false
  @usableFromInline var becameIdle = false
  /// A timer firing left due entries in the heap: call ``KeyedBurstDriver/popDue(at:limit:)``
  /// again, outside the lock.
  @usableFromInline var moreDue = false

  @inlinable
  init() {}

  @inlinable
  func applyClosings() {
    closing?.apply()
    for closing in closings { closing.apply() }
  }
}

/// The one driver of a keyed instance: a ``BurstSlot`` per key with a pending burst or a run,
/// one ``TimerHeap`` for all of them behind a single armed timer, and the queue of due runs.
///
/// Every key follows the rules of the single driver (its slot is the same code). What is added
/// here is only what many keys need: the heap, a ready queue of keys whose next run may start
/// (oldest decision first), at most one running task per key, a bound on running tasks, and
/// dropping a key's state as soon as it is idle.
///
/// The driver and what it calls are `@inlinable` (or `@usableFromInline`), so that a client
/// compiles the keyed path for its own `Key` and `Value`; run unspecialised from the client,
/// generic metadata lookups took more than half of every submission.
@usableFromInline
struct KeyedBurstDriver<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  @usableFromInline typealias Run = DecidedRun<Value>

  @usableFromInline
  struct KeyState: Sendable {
    @usableFromInline var slot: BurstSlot<Value>
    @usableFromInline var isRunning = false
    /// Runs decided and not yet started, oldest first; they start one at a time.
    @usableFromInline var decided = RunQueue<Run>()

    @inlinable
    init(slot: BurstSlot<Value>) {
      self.slot = slot
    }

    @inlinable var isIdle: Bool { !slot.isPending && !isRunning && decided.isEmpty }
  }

  @usableFromInline let rules: BurstRules
  /// How many worker loops may run at once: `maxConcurrentTasks`, or a default.
  @usableFromInline let workerLimit: Int
  @usableFromInline var ids = BurstIDs()
  @usableFromInline var durations = DurationCache()
  @usableFromInline var keys = KeyTable<Key, KeyState>()
  @usableFromInline var heap = TimerHeap<Key>()
  /// Heap entries that no key's live timer is any more.
  @usableFromInline var staleEntries = 0
  /// Keys whose oldest decided run may start, oldest decision first.
  @usableFromInline var ready = RunQueue<Key>()
  @usableFromInline var workers = 0
  /// The instance's one armed timer.
  @usableFromInline var armed: TimerRequest?
  @usableFromInline var armedHandle: TimerHandle?
  @usableFromInline var pendingCount = 0
  /// Pending bursts plus runs decided and not yet finished.
  @usableFromInline var outstanding = 0

  @inlinable
  init(options: DelayOptions, maxConcurrentTasks: Int?) {
    rules = BurstRules(options)
    workerLimit = maxConcurrentTasks ?? 64
  }

  @inlinable
  func isPending(_ key: Key) -> Bool { keys[key]?.slot.isPending ?? false }

  /// Whether `key` has a run decided or running.
  @inlinable
  func hasRuns(_ key: Key) -> Bool {
    guard let state = keys[key] else { return false }
    return state.isRunning || !state.decided.isEmpty
  }

  /// Runs decided and not yet finished, all keys together.
  @inlinable var unfinishedRuns: Int { outstanding - pendingCount }

  /// Keys that hold state (pending, running or with decided runs), and heap entries; for tests.
  @inlinable var footprint: (keys: Int, timers: Int) { (keys.count, heap.count) }

  @inlinable
  mutating func delay(
    _ key: Key, _ delay: RequestedDelay, now: Tick, value: Value, owner: AnyObject
  ) -> (DelayTicket, KeyedEffects) {
    let requested = durations.deadline(after: delay, from: now)
    var effects = KeyedEffects()
    // A pending key is updated in place through its index: no default value to build, and
    // no copy of its state. A new key's state is built aside and stored once.
    let result: BurstSlot<Value>.Submission
    if let position = keys.position(of: key) {
      result = keys[at: position].slot.delay(
        at: now, until: requested, work: value, rules: rules, ids: &ids, owner: owner)
    } else {
      var state = KeyState(slot: BurstSlot(work: nil, reportsPreemptionAlways: true))
      result = state.slot.delay(
        at: now, until: requested, work: value, rules: rules, ids: &ids, owner: owner)
      keys.insert(state, for: key)
    }
    if result.replacedLiveTimer { staleEntries += 1 }
    if result.started {
      effects.startedBurst = true
      effects.becameBusy = outstanding == 0
      pendingCount += 1
      outstanding += 1
    }
    if let leading = result.leading { decide(leading, for: key, &effects) }
    if let timer = result.timer { schedule(timer, for: key, &effects) }
    return (result.ticket, effects)
  }

  @inlinable
  mutating func cancel(_ key: Key) -> KeyedEffects {
    var effects = KeyedEffects()
    guard let closing = keys[key]?.slot.cancel() else { return effects }
    effects.closing = closing
    endBurst(of: key, &effects)
    return effects
  }

  @inlinable
  mutating func flush(_ key: Key) -> KeyedEffects {
    var effects = KeyedEffects()
    guard let (run, closing) = keys[key]?.slot.flush() else { return effects }
    effects.closing = closing
    if let run { decide(run, for: key, &effects) }
    endBurst(of: key, &effects)
    return effects
  }

  @inlinable
  mutating func cancelAll() -> KeyedEffects {
    var effects = KeyedEffects()
    for key in pendingKeys() {
      if let closing = keys[key]?.slot.cancel() { effects.closings.append(closing) }
      endBurst(of: key, &effects)
    }
    return effects
  }

  @inlinable
  mutating func flushAll() -> KeyedEffects {
    var effects = KeyedEffects()
    for key in pendingKeys() {
      guard let (run, closing) = keys[key]?.slot.flush() else { continue }
      effects.closings.append(closing)
      if let run { decide(run, for: key, &effects) }
      endBurst(of: key, &effects)
    }
    return effects
  }

  /// The owner is going away: cancel every pending burst and the timer.
  @inlinable
  mutating func release() -> KeyedEffects {
    var effects = cancelAll()
    effects.cancelledTimer = armedHandle.take()
    armed = nil
    return effects
  }

  /// The instance's timer named `generation` fired at `now`: ends the bursts that are due, in
  /// deadline order, at most `limit` of them (see ``popDue(at:limit:)`` for the rest), and
  /// re-arms for the earliest deadline left.
  @inlinable
  mutating func timerFired(
    at now: Tick, generation: UInt64, limit: Int = .max
  ) -> KeyedEffects {
    guard armed?.generation == generation else { return KeyedEffects() }
    armed = nil
    armedHandle = nil
    return popDue(at: now, limit: limit)
  }

  /// Ends the bursts of at most `limit` due heap entries, in deadline order. When due entries
  /// remain, `effects.moreDue` asks the shell to call again once it has released its lock (so
  /// that workers can take the runs decided so far); otherwise the timer is armed for the
  /// earliest deadline left, unless an earlier one is armed already.
  @inlinable
  mutating func popDue(at now: Tick, limit: Int) -> KeyedEffects {
    var effects = KeyedEffects()
    var popped = 0
    while popped < limit, let entry = heap.popDue(by: now) {
      popped += 1
      guard let position = keys.position(of: entry.key) else {
        staleEntries = max(staleEntries - 1, 0)
        continue
      }
      switch keys[at: position].slot.timerFired(at: now, generation: entry.generation, ids: &ids) {
      case .stale:
        staleEntries = max(staleEntries - 1, 0)
      case .rearm(let timer):
        heap.insert(
          TimerHeap.Entry(deadline: timer.deadline, generation: timer.generation, key: entry.key))
      case .ended(let run, let closing):
        effects.closings.append(closing)
        if let run { decide(run, for: entry.key, at: position, &effects) }
        endBurst(of: entry.key, at: position, &effects)
      }
    }
    if popped == limit, let first = heap.first, first.deadline <= now {
      effects.moreDue = true
    } else {
      armEarliest(&effects)
    }
    return effects
  }

  /// Called by a worker: marks the runs of `finishing` as returned (their tickets already
  /// resolved), then takes the next batch of due runs, up to `batchLimit`. An empty batch
  /// means the worker stops.
  @inlinable
  mutating func nextRuns(
    finishing finished: [Key], batchLimit: Int = 64
  ) -> (runs: [(Key, Run)], effects: KeyedEffects) {
    var effects = KeyedEffects()
    for key in finished {
      let position = keys.position(of: key)!
      keys[at: position].isRunning = false
      outstanding -= 1
      if !keys[at: position].decided.isEmpty {
        ready.append(key)
      } else if keys[at: position].isIdle {
        drop(key)
      }
    }
    let size = min(ready.count, max(1, min(batchLimit, ready.count / max(workerLimit, 1))))
    var runs: [(Key, Run)] = []
    if size > 0 { runs.reserveCapacity(size) }
    while runs.count < size, let key = ready.popFirst() {
      let position = keys.position(of: key)!
      let run = keys[at: position].decided.popFirst()!
      keys[at: position].isRunning = true
      runs.append((key, run))
    }
    if runs.isEmpty { workers -= 1 }
    startWorkers(&effects)
    effects.becameIdle = outstanding == 0 && !finished.isEmpty
    return (runs, effects)
  }

  /// Keeps `handle` as the armed timer's, or returns it to be cancelled when that timer is no
  /// longer the armed one.
  @inlinable
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    guard armed?.generation == generation else { return handle }
    let replaced = armedHandle
    armedHandle = handle
    return replaced
  }

  @inlinable
  func pendingKeys() -> [Key] {
    keys.keys { $0.slot.isPending }
  }

  @inlinable
  mutating func decide(_ run: Run, for key: Key, _ effects: inout KeyedEffects) {
    decide(run, for: key, at: keys.position(of: key)!, &effects)
  }

  /// ``decide(_:for:_:)`` for a key whose position in `keys` is known.
  @inlinable
  mutating func decide(
    _ run: Run, for key: Key, at position: Int, _ effects: inout KeyedEffects
  ) {
    keys[at: position].decided.append(run)
    outstanding += 1
    if !keys[at: position].isRunning && keys[at: position].decided.count == 1 {
      ready.append(key)
    }
    startWorkers(&effects)
  }

  /// Starts a worker per ready run, up to the limit: workers that are busy running a batch
  /// cannot take ready runs, and one that finds nothing left simply stops.
  @inlinable
  mutating func startWorkers(_ effects: inout KeyedEffects) {
    let wanted = min(ready.count, workerLimit - workers)
    guard wanted > 0 else { return }
    workers += wanted
    effects.workers += wanted
  }

  /// The burst of `key` ended (its closing is in `effects`).
  @inlinable
  mutating func endBurst(of key: Key, _ effects: inout KeyedEffects) {
    endBurst(of: key, at: keys.position(of: key)!, &effects)
  }

  /// ``endBurst(of:_:)`` for a key whose position in `keys` is known.
  @inlinable
  mutating func endBurst(of key: Key, at position: Int, _ effects: inout KeyedEffects) {
    pendingCount -= 1
    outstanding -= 1
    keys[at: position].slot.forgetWork()
    if keys[at: position].isIdle { drop(key) }
    effects.becameIdle = outstanding == 0
  }

  /// Drops an idle key's state; its timer, if still in the heap, becomes a stale entry. Once no
  /// key holds state, the heap goes too (the key table frees its own buffers): an array keeps
  /// its capacity when emptied, and a million keys that have all fired must not keep it.
  @inlinable
  mutating func drop(_ key: Key) {
    guard let state = keys.removeValue(forKey: key) else { return }
    if state.slot.machine.liveTimer != nil { staleEntries += 1 }
    if keys.count == 0 {
      // With no key left, every heap entry is stale.
      heap = TimerHeap()
      staleEntries = 0
    } else if staleEntries > 1_024, staleEntries * 2 > heap.count {
      compactHeap()
    }
  }

  @inlinable
  mutating func compactHeap() {
    heap.compact { entry in keys[entry.key]?.slot.machine.liveTimer?.generation == entry.generation
    }
    staleEntries = 0
  }

  @inlinable
  mutating func schedule(_ timer: TimerRequest, for key: Key, _ effects: inout KeyedEffects) {
    heap.insert(TimerHeap.Entry(deadline: timer.deadline, generation: timer.generation, key: key))
    if let armed, armed.deadline <= timer.deadline { return }
    arm(at: timer.deadline, &effects)
  }

  @inlinable
  mutating func armEarliest(_ effects: inout KeyedEffects) {
    guard let first = heap.first else { return }
    if let armed, armed.deadline <= first.deadline { return }
    arm(at: first.deadline, &effects)
  }

  @inlinable
  mutating func arm(at deadline: Tick, _ effects: inout KeyedEffects) {
    let timer = TimerRequest(deadline: deadline, generation: ids.nextGeneration())
    armed = timer
    effects.timer = timer
    effects.cancelledTimer = armedHandle.take()
  }
}
