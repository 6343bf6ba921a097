/// What a shell must do after an event of a driver (single or keyed), outside its lock. One
/// type for every driver, performed by one interpreter, ``perform(start:arm:becameIdle:)``, in
/// one order: resume the waiters that learned a preemption, apply the closings, cancel the
/// replaced timer, start runs, arm the timer, then leave the busy state.
@usableFromInline
struct BurstEffects: Sendable {
  /// The closing of the one burst this event ended.
  @usableFromInline var closing: BurstClosing?
  /// The closings of an event that ended many bursts (a keyed timer firing, `cancelAll`,
  /// `flushAll`); `nil` rather than empty, so that the single queue's hot path carries no array.
  @usableFromInline var closings: [BurstClosing]?
  /// A burst record that learned a preemption while somebody awaits one of its tickets.
  @usableFromInline var preempted: BurstRecord?
  /// How many runs to start: the single driver's decided runs (each taken in decision order
  /// with ``BurstDriver/takeRun()``), or the keyed driver's worker loops (each taking due runs
  /// with ``KeyedBurstDriver/nextRuns(finishing:batchLimit:)`` until there are none).
  @usableFromInline var starts = 0
  @usableFromInline var timer: TimerRequest?
  /// The handle of the timer that `timer` replaces, or of the timer of an owner going away.
  @usableFromInline var cancelledTimer: TimerHandle?
  /// The submission started a burst (the actors' `cancelsRunningTask` acts on it).
  @usableFromInline var startedBurst = false
  /// Nothing was pending or running before this event, and something is now: the shell enters
  /// its busy state under its lock, before anything can end it.
  @usableFromInline var becameBusy = false
  /// Nothing is pending or running any more.
  @usableFromInline var becameIdle = false
  /// A keyed timer firing left due entries in the heap: call
  /// ``KeyedBurstDriver/popDue(at:limit:)`` again, outside the lock.
  @usableFromInline var moreDue = false

  @inlinable
  init() {}

  /// How many bursts this event ended.
  @inlinable var closedCount: Int { (closing == nil ? 0 : 1) + (closings?.count ?? 0) }

  /// Adds the closing of one more ended burst.
  @inlinable
  mutating func close(_ closing: BurstClosing) {
    if self.closing == nil {
      self.closing = closing
    } else {
      if closings == nil { closings = [] }
      closings!.append(closing)
    }
  }

  /// The one interpreter of effects, for every shell: a shell says only how it starts runs,
  /// how it arms a timer (``BurstTimer/arm(_:tolerance:delivery:install:)``) and what it does
  /// once idle. Call it outside the shell's lock: it resumes waiting tasks.
  @inlinable @inline(__always)
  func perform(
    start: (_ count: Int) -> Void, arm: (TimerRequest) -> Void, becameIdle: () -> Void
  ) {
    preempted?.resumeResolved()
    closing?.apply()
    if let closings { for closing in closings { closing.apply() } }
    cancelledTimer?.cancel()
    if starts > 0 { start(starts) }
    if let timer { arm(timer) }
    if self.becameIdle { becameIdle() }
  }

  /// Performs the effects of an owner going away (``BurstDriver/release()``,
  /// ``KeyedBurstDriver/release()``): they end bursts and stop the timer, and start nothing.
  @inlinable
  func performRelease() {
    perform(start: { _ in }, arm: { _ in }, becameIdle: {})
  }
}

/// The bookkeeping every driver shares: the counters that name submissions and timers, the
/// duration cache, the outstanding count behind the busy state, the order in which decided
/// runs may start, and the one armed timer with its handle.
///
/// `Ready` is what the run order holds: the single driver's decided runs themselves, or the
/// keyed driver's keys whose oldest decided run may start.
@usableFromInline
struct BurstBook<Ready>: Sendable where Ready: Sendable {
  @usableFromInline var ids = BurstIDs()
  @usableFromInline var durations = DurationCache()
  /// Pending bursts plus runs decided and not yet finished.
  @usableFromInline var outstanding = 0
  /// Decided runs (or keys with one) in the order they may start, oldest decision first.
  @usableFromInline var ready = RunQueue<Ready>()
  /// The instance's one armed timer, until it fires.
  @usableFromInline var armed: TimerRequest?
  /// The armed timer's handle, once the shell has installed it.
  @usableFromInline var armedHandle: TimerHandle?

  @inlinable
  init() {}

  /// A burst started: the instance is busy until it and its runs are done.
  @inlinable @inline(__always)
  mutating func burstStarted(_ effects: inout BurstEffects) {
    effects.startedBurst = true
    effects.becameBusy = outstanding == 0
    outstanding += 1
  }

  /// A burst ended (its closing is in `effects`, its run, if any, decided first).
  @inlinable @inline(__always)
  mutating func burstEnded(_ effects: inout BurstEffects) {
    outstanding -= 1
    effects.becameIdle = outstanding == 0
  }

  /// A run was decided; it is outstanding until ``runFinished()``.
  @inlinable @inline(__always)
  mutating func runDecided() {
    outstanding += 1
  }

  /// A run has returned and resolved its ticket; returns whether the instance is now idle.
  @inlinable @inline(__always)
  mutating func runFinished() -> Bool {
    outstanding -= 1
    return outstanding == 0
  }

  /// Asks the shell to arm `timer`, which replaces the armed one: its handle is cancelled.
  @inlinable @inline(__always)
  mutating func arm(_ timer: TimerRequest, _ effects: inout BurstEffects) {
    armed = timer
    effects.timer = timer
    effects.cancelledTimer = armedHandle.take()
  }

  /// The timer named `generation` fired: returns whether it was the armed one, which is then
  /// armed no longer.
  @inlinable
  mutating func fired(generation: UInt64) -> Bool {
    guard armed?.generation == generation else { return false }
    armed = nil
    armedHandle = nil
    return true
  }

  /// The owner is going away: nothing is armed any more, and the timer is cancelled.
  @inlinable
  mutating func disarm(_ effects: inout BurstEffects) {
    armed = nil
    if let handle = armedHandle.take() { effects.cancelledTimer = handle }
  }

  /// Keeps `handle` as the armed timer's, or returns it to be cancelled when the timer it arms
  /// is no longer the armed one (it fired, or was replaced, before the shell got here).
  @inlinable
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    guard armed?.generation == generation else { return handle }
    let replaced = armedHandle
    armedHandle = handle
    return replaced
  }
}

extension BurstTimer {
  /// Arms `request` and hands its handle to `install`, which runs under the shell's lock (or in
  /// its isolation) and returns a handle to cancel: the timer it replaced, or its own when it
  /// is no longer the armed one. The one way every shell arms.
  @inlinable
  func arm(
    _ request: TimerRequest, tolerance: Duration?, delivery: TimerDelivery,
    install: (TimerHandle, _ generation: UInt64) -> TimerHandle?
  ) {
    let handle = arm(at: request.deadline, tolerance: tolerance, delivery: delivery)
    install(handle, request.generation)?.cancel()
  }
}
