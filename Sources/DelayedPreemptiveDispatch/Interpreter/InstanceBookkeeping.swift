/// What a ``BurstDriver`` keeps for its instance as a whole, beside its lines: the counters that
/// name submissions and timers, the duration cache, the outstanding count behind the busy
/// state, the lines whose oldest decided run may start (oldest decision first), and the one
/// armed timer with its handle.
@usableFromInline
struct InstanceBookkeeping<LineID: Sendable>: Sendable {
  @usableFromInline var ids = BurstIDs()
  @usableFromInline var durations = DurationCache()
  /// Pending bursts plus runs decided and not yet finished.
  @usableFromInline var outstanding = 0
  /// Lines whose oldest decided run may start, oldest decision first.
  @usableFromInline var ready = FIFO<LineID>()
  /// The instance's one armed timer, until it fires.
  @usableFromInline var armed: TimerRequest?
  /// The armed timer's handle, once the shell has installed it.
  @usableFromInline var armedHandle: TimerHandle?

  @inlinable
  init() {}

  /// A burst started: the instance is busy until it and its runs are done.
  @inlinable @inline(__always)
  mutating func burstStarted(_ effects: inout BurstEffects) {
    effects.becameBusy = outstanding == 0
    outstanding += 1
  }

  /// A burst ended (its resolution is in `effects`, its run, if any, decided first).
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
