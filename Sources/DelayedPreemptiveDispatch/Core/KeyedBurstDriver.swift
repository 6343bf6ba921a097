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
    // Declared so that the small fields fill the slot's tail padding: the state of a pending
    // key is 88 bytes with `Value == Void`.
    @usableFromInline var slot: BurstSlot<Value>
    @usableFromInline var isRunning = false
    /// With `cancelsRunningTask`: how many of the oldest runs in `decided` belong to bursts
    /// that a newer burst has made stale; they start already cancelled.
    @usableFromInline var staleDecided: Int32 = 0
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
  /// `cancelsRunningTask`: a new burst of a key makes every unfinished run of its earlier
  /// bursts stale (``DecidedRun/isStale``).
  @usableFromInline let cancelsStaleRuns: Bool
  /// `combine`: bursts keep every value, and no submission is preempted.
  @usableFromInline let keepsEveryValue: Bool
  /// Counters, durations, the busy count, the ready keys (oldest decision first) and the one
  /// armed timer: the bookkeeping every driver shares.
  @usableFromInline var book = BurstBook<Key>()
  @usableFromInline var keys = KeyTable<Key, KeyState>()
  @usableFromInline var heap = TimerHeap<Key>()
  /// Heap entries that no key's live timer is any more.
  @usableFromInline var staleEntries = 0
  @usableFromInline var workers = 0
  @usableFromInline var pendingCount = 0

  /// - Precondition: `maxConcurrentTasks`, when given, is at least 1; the message names the
  ///   parameter and `instance`, the public type.
  @usableFromInline
  init(
    options: DelayOptions, maxConcurrentTasks: Int?, cancelsStaleRuns: Bool = false,
    keepsEveryValue: Bool = false, instance: String = "KeyedBurstDriver"
  ) {
    if let maxConcurrentTasks {
      requireArgument(
        maxConcurrentTasks >= 1,
        "\(instance): maxConcurrentTasks must be at least 1, got \(maxConcurrentTasks)")
    }
    rules = BurstRules(options)
    workerLimit = maxConcurrentTasks ?? 64
    self.cancelsStaleRuns = cancelsStaleRuns
    self.keepsEveryValue = keepsEveryValue
  }

  /// With `combine`: the value of `key`'s pending burst, taken out for the shell to merge the
  /// next submission into (outside its lock); the shell then submits the merged value, before
  /// anything can end the burst. `nil` when the key has no burst to merge into.
  @inlinable
  mutating func takeValueToCombine(_ key: Key) -> Value? {
    guard let position = keys.position(of: key) else { return nil }
    return keys[at: position].slot.takeValueToCombine()
  }

  @inlinable
  func isPending(_ key: Key) -> Bool { keys[key]?.slot.isPending ?? false }

  /// Whether `key` has a run decided or running.
  @inlinable
  func hasRuns(_ key: Key) -> Bool {
    guard let state = keys[key] else { return false }
    return state.isRunning || !state.decided.isEmpty
  }

  /// Pending bursts plus runs decided and not yet finished.
  @inlinable var outstanding: Int { book.outstanding }

  /// Runs decided and not yet finished, all keys together.
  @inlinable var unfinishedRuns: Int { book.outstanding - pendingCount }

  /// Keys that hold state (pending, running or with decided runs), and heap entries; for tests.
  @inlinable var footprint: (keys: Int, timers: Int) { (keys.count, heap.count) }

  @inlinable
  mutating func delay(
    _ key: Key, _ delay: RequestedDelay, now: Tick, value: Value, owner: AnyObject
  ) -> (DelayTicket, BurstEffects) {
    var effects = BurstEffects()
    let ticket = self.delay(key, delay, now: now, value: value, owner: owner, effects: &effects)
    return (ticket, effects)
  }

  /// A submission; what the shell must do afterwards goes into `effects`, which the caller
  /// keeps outside its lock (returning it with the ticket would copy it through the lock's
  /// generic result on every call).
  @inlinable
  mutating func delay(
    _ key: Key, _ delay: RequestedDelay, now: Tick, value: Value, owner: AnyObject,
    effects: inout BurstEffects
  ) -> DelayTicket {
    let requested = book.durations.deadline(after: delay, from: now)
    // A pending key is updated in place through its index: no default value to build, and
    // no copy of its state. A new key's state is built aside and stored once.
    let result: BurstSlot<Value>.Submission
    if let position = keys.position(of: key) {
      result = keys[at: position].slot.delay(
        at: now, until: requested, work: value, rules: rules, ids: &book.ids, owner: owner)
      if cancelsStaleRuns && result.started {
        // Every run of the key's earlier bursts is stale now (before this burst's leading run
        // is decided): the shell cancels the running one, these start cancelled.
        keys[at: position].staleDecided = Int32(keys[at: position].decided.count)
      }
    } else {
      var state = KeyState(
        slot: BurstSlot(work: nil, reportsPreemptionAlways: true, keepsAll: keepsEveryValue))
      result = state.slot.delay(
        at: now, until: requested, work: value, rules: rules, ids: &book.ids, owner: owner)
      keys.insert(state, for: key)
    }
    if result.replacedLiveTimer { staleEntries += 1 }
    effects.preempted = result.preempted
    if result.started {
      book.burstStarted(&effects)
      pendingCount += 1
    }
    if let leading = result.leading { decide(leading, for: key, &effects) }
    if let timer = result.timer { schedule(timer, for: key, &effects) }
    if let (run, closing) = result.completed {
      effects.close(closing)
      if let run { decide(run, for: key, &effects) }
      endBurst(of: key, &effects)
    }
    return result.ticket
  }

  @inlinable
  mutating func cancel(_ key: Key) -> BurstEffects {
    var effects = BurstEffects()
    guard let closing = keys[key]?.slot.cancel() else { return effects }
    effects.close(closing)
    endBurst(of: key, &effects)
    return effects
  }

  @inlinable
  mutating func flush(_ key: Key) -> BurstEffects {
    var effects = BurstEffects()
    guard let (run, closing) = keys[key]?.slot.flush() else { return effects }
    effects.close(closing)
    if let run { decide(run, for: key, &effects) }
    endBurst(of: key, &effects)
    return effects
  }

  @inlinable
  mutating func cancelAll() -> BurstEffects {
    var effects = BurstEffects()
    for key in pendingKeys() {
      if let closing = keys[key]?.slot.cancel() { effects.close(closing) }
      endBurst(of: key, &effects)
    }
    return effects
  }

  @inlinable
  mutating func flushAll() -> BurstEffects {
    var effects = BurstEffects()
    for key in pendingKeys() {
      guard let (run, closing) = keys[key]?.slot.flush() else { continue }
      effects.close(closing)
      if let run { decide(run, for: key, &effects) }
      endBurst(of: key, &effects)
    }
    return effects
  }

  /// The owner is going away: cancel every pending burst and the timer.
  @inlinable
  mutating func release() -> BurstEffects {
    var effects = cancelAll()
    book.disarm(&effects)
    return effects
  }

  /// The instance's timer named `generation` fired at `now`: ends the bursts that are due, in
  /// deadline order, at most `limit` of them (see ``popDue(at:limit:)`` for the rest), and
  /// re-arms for the earliest deadline left.
  @inlinable
  mutating func timerFired(
    at now: Tick, generation: UInt64, limit: Int = .max
  ) -> BurstEffects {
    guard book.fired(generation: generation) else { return BurstEffects() }
    return popDue(at: now, limit: limit)
  }

  /// Ends the bursts of at most `limit` due heap entries, in deadline order. When due entries
  /// remain, `effects.moreDue` asks the shell to call again once it has released its lock (so
  /// that workers can take the runs decided so far); otherwise the timer is armed for the
  /// earliest deadline left, unless an earlier one is armed already.
  @inlinable
  mutating func popDue(at now: Tick, limit: Int) -> BurstEffects {
    var effects = BurstEffects()
    var popped = 0
    while popped < limit, let entry = heap.popDue(by: now) {
      popped += 1
      guard let position = keys.position(of: entry.key) else {
        staleEntries = max(staleEntries - 1, 0)
        continue
      }
      switch keys[at: position].slot.timerFired(
        at: now, generation: entry.generation, ids: &book.ids)
      {
      case .stale:
        staleEntries = max(staleEntries - 1, 0)
      case .rearm(let timer):
        heap.insert(
          TimerHeap.Entry(deadline: timer.deadline, generation: timer.generation, key: entry.key))
      case .ended(let work, let burstEnd):
        let (run, closing) = keys[at: position].slot.ended(work, burstEnd)
        effects.close(closing)
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
  ) -> (runs: [(Key, Run)], effects: BurstEffects) {
    var effects = BurstEffects()
    for key in finished {
      let position = keys.position(of: key)!
      keys[at: position].isRunning = false
      _ = book.runFinished()
      if !keys[at: position].decided.isEmpty {
        book.ready.append(key)
      } else if keys[at: position].isIdle {
        drop(key)
      }
    }
    let ready = book.ready.count
    let size = min(ready, max(1, min(batchLimit, ready / max(workerLimit, 1))))
    var runs: [(Key, Run)] = []
    if size > 0 { runs.reserveCapacity(size) }
    while runs.count < size, let key = book.ready.popFirst() {
      let position = keys.position(of: key)!
      var run = keys[at: position].decided.popFirst()!
      if keys[at: position].staleDecided > 0 {
        keys[at: position].staleDecided -= 1
        run.isStale = true
      }
      keys[at: position].isRunning = true
      runs.append((key, run))
    }
    if runs.isEmpty { workers -= 1 }
    startWorkers(&effects)
    effects.becameIdle = book.outstanding == 0 && !finished.isEmpty
    return (runs, effects)
  }

  /// Keeps `handle` as the armed timer's, or returns the handle to cancel.
  @inlinable
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    book.install(handle, generation: generation)
  }

  @inlinable
  func pendingKeys() -> [Key] {
    keys.keys { $0.slot.isPending }
  }

  @inlinable
  mutating func decide(_ run: Run, for key: Key, _ effects: inout BurstEffects) {
    decide(run, for: key, at: keys.position(of: key)!, &effects)
  }

  /// ``decide(_:for:_:)`` for a key whose position in `keys` is known.
  @inlinable
  mutating func decide(
    _ run: Run, for key: Key, at position: Int, _ effects: inout BurstEffects
  ) {
    keys[at: position].decided.append(run)
    book.runDecided()
    if !keys[at: position].isRunning && keys[at: position].decided.count == 1 {
      book.ready.append(key)
    }
    startWorkers(&effects)
  }

  /// Starts a worker per ready run, up to the limit: workers that are busy running a batch
  /// cannot take ready runs, and one that finds nothing left simply stops.
  @inlinable
  mutating func startWorkers(_ effects: inout BurstEffects) {
    let wanted = min(book.ready.count, workerLimit - workers)
    guard wanted > 0 else { return }
    workers += wanted
    effects.starts += wanted
  }

  /// The burst of `key` ended (its closing is in `effects`).
  @inlinable
  mutating func endBurst(of key: Key, _ effects: inout BurstEffects) {
    endBurst(of: key, at: keys.position(of: key)!, &effects)
  }

  /// ``endBurst(of:_:)`` for a key whose position in `keys` is known.
  @inlinable
  mutating func endBurst(of key: Key, at position: Int, _ effects: inout BurstEffects) {
    pendingCount -= 1
    keys[at: position].slot.forgetWork()
    if keys[at: position].isIdle { drop(key) }
    book.burstEnded(&effects)
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
  mutating func schedule(_ timer: TimerRequest, for key: Key, _ effects: inout BurstEffects) {
    heap.insert(TimerHeap.Entry(deadline: timer.deadline, generation: timer.generation, key: key))
    if let armed = book.armed, armed.deadline <= timer.deadline { return }
    arm(at: timer.deadline, &effects)
  }

  @inlinable
  mutating func armEarliest(_ effects: inout BurstEffects) {
    guard let first = heap.first else { return }
    if let armed = book.armed, armed.deadline <= first.deadline { return }
    arm(at: first.deadline, &effects)
  }

  @inlinable
  mutating func arm(at deadline: Tick, _ effects: inout BurstEffects) {
    book.arm(TimerRequest(deadline: deadline, generation: book.ids.nextGeneration()), &effects)
  }
}
