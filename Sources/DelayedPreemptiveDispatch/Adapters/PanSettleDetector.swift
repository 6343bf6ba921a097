import Dispatch

/// Reports when panning has come to rest: `onSettle` runs once `settleDelay` has passed since
/// the last `panDidStop()` with no `panDidBegin()` after it.
///
/// ```swift
/// let settle = PanSettleDetector(settleDelay: .milliseconds(250), callbackActor: MainActor.shared) {
///   map.loadTilesForVisibleRegion()   // a @MainActor method
/// }
/// @MainActor func panGestureChanged(_ gesture: UIPanGestureRecognizer) {   // UIKit calls it there
///   switch gesture.state {
///   case .began: settle.panDidBegin()
///   case .ended, .cancelled, .failed: settle.panDidStop()
///   default: break
///   }
/// }
/// ```
///
/// - Rules: a burst of stops settles once, `settleDelay` after the last one. ``panDidBegin()``
///   holds the settle off until the next stop. With `maxWait`, an endless run of short pans
///   still settles: at most `maxWait` after the first pan event since the last settle, or, if a
///   pan is in motion then, at once when it stops. The bound holds however dense the events
///   (plus scheduling latency): an event that races the firing belongs to that settle.
/// - Pending work: one timer at a time, a ``DelayedPreemptiveDispatchQueue``; each stop
///   preempts the pending settle. A pending timer does not keep the detector alive; releasing
///   it cancels the timer, and no callback follows.
/// - Callbacks: `onSettle` runs on the main actor with `callbackActor: MainActor.shared`, or on
///   `callbackQueue`, or on a serial queue the detector owns,
///   once per settle and never under a lock. A concurrent `callbackQueue` may run two of them at
///   the same time.
/// - Tests: on a ``SchedulingClock`` such as `ManualClock`, `advance(by:)` returns after the
///   callbacks that its timers caused have run. A callback that a method call caused directly is
///   only enqueued; a serial `callbackQueue` runs it before any later one.
/// - Thread safety: every method may be called from any thread.
public final class PanSettleDetector: Sendable {
  struct State {
    var panning = false
    var settled = true
    /// `maxWait` passed during a pan: the next stop settles at once.
    var overdue = false
    /// Names the latest pan event; a timer armed by an earlier one is stale.
    var generation: UInt64 = 0
    /// When the current settle is due by `maxWait`; `nil` with no bound or while settled. The
    /// detector decides by it, not by the timer's burst, so a pan event that lands while an
    /// expiring timer waits for the lock cannot open a fresh window.
    var deadline: Duration?
    /// The latest clock reading seen under the lock; readings are taken before the lock, so a
    /// thread may bring an older one, and the state keeps time moving forward.
    var latest = Duration.zero

    /// Takes a pan event read at `reading`: returns the instant it counts at, and opens the
    /// `maxWait` deadline if this is the first event since the last settle.
    mutating func event(at reading: Duration, maxWait: Duration?) -> Duration {
      latest = max(latest, reading)
      settled = false
      generation &+= 1
      if deadline == nil, let maxWait { deadline = latest + maxWait }
      return latest
    }
  }

  let state = LockBox(State())
  private let settleDelay: Duration
  private let maxWait: Duration?
  let timing: AdapterTiming
  let timer: DelayedPreemptiveDispatchQueue
  private let callbacks: CallbackQueue
  private let onSettle: @Sendable () -> Void

  /// Creates a detector on real time.
  ///
  /// - Parameters:
  ///   - settleDelay: The quiet time after the last stop that counts as settled.
  ///   - callbackQueue: Where `onSettle` runs; `nil` for a serial queue the detector owns.
  ///   - onSettle: Called once per settle.
  /// - Precondition: `settleDelay` is positive (and `maxWait`, in the initialisers that take it).
  ///   A zero or negative value stops the program with a message naming the parameter, as for
  ///   every adapter's quiet period.
  public convenience init(
    settleDelay: Duration = .milliseconds(250), callbackQueue: DispatchQueue? = nil,
    onSettle: @escaping @Sendable () -> Void
  ) {
    self.init(
      settleDelay: settleDelay, maxWait: nil, timing: .realTime, callbackQueue: callbackQueue,
      onSettle: onSettle)
  }

  /// Creates a detector that follows `clock`; `ManualClock` for tests.
  public convenience init<C: Clock>(
    settleDelay: Duration = .milliseconds(250), clock: C, callbackQueue: DispatchQueue? = nil,
    onSettle: @escaping @Sendable () -> Void
  ) where C.Duration == Duration {
    self.init(
      settleDelay: settleDelay, maxWait: nil, timing: .clock(clock),
      callbackQueue: callbackQueue, onSettle: onSettle)
  }

  /// Creates a detector on real time that settles at most `maxWait` after the first pan event
  /// since the last settle, however the pans go on (or when the pan in motion then stops).
  ///
  /// - Precondition: `settleDelay` and `maxWait` are positive.
  public convenience init(
    settleDelay: Duration = .milliseconds(250), maxWait: Duration,
    callbackQueue: DispatchQueue? = nil, onSettle: @escaping @Sendable () -> Void
  ) {
    self.init(
      settleDelay: settleDelay, maxWait: maxWait, timing: .realTime,
      callbackQueue: callbackQueue, onSettle: onSettle)
  }

  /// Creates a detector with `maxWait` that follows `clock`; `ManualClock` for tests.
  public convenience init<C: Clock>(
    settleDelay: Duration = .milliseconds(250), maxWait: Duration, clock: C,
    callbackQueue: DispatchQueue? = nil, onSettle: @escaping @Sendable () -> Void
  ) where C.Duration == Duration {
    self.init(
      settleDelay: settleDelay, maxWait: maxWait, timing: .clock(clock),
      callbackQueue: callbackQueue, onSettle: onSettle)
  }

  init(
    settleDelay: Duration, maxWait: Duration?, timing: AdapterTiming,
    callbackQueue: DispatchQueue?, onSettle: @escaping @Sendable () -> Void
  ) {
    requireArgument(
      settleDelay > .zero, "PanSettleDetector: settleDelay must be positive, got \(settleDelay)")
    if let maxWait {
      requireArgument(
        maxWait > .zero, "PanSettleDetector: maxWait must be positive, got \(maxWait)")
    }
    self.settleDelay = settleDelay
    self.maxWait = maxWait
    self.timing = timing
    // The detector keeps the `maxWait` deadline itself and caps each delay by it.
    timer = timing.makeQueue(
      label: "PanSettleDetector.timer", options: DelayOptions(deadlinePolicy: .restart))
    callbacks = CallbackQueue(given: callbackQueue, label: "PanSettleDetector.callbacks")
    self.onSettle = onSettle
  }

  /// A pan motion started: no settle while panning. The pending settle is held off until the
  /// next ``panDidStop()`` (with `maxWait`, the bound still counts).
  public func panDidBegin() {
    let reading = timing.now()
    state.withLock { state in begin(&state, reading: reading) }
  }

  /// A pan began, under the lock: the timer moves to the `maxWait` deadline, if any.
  func begin(_ state: inout State, reading: Duration) {
    let now = state.event(at: reading, maxWait: maxWait)
    state.panning = true
    guard !state.overdue else { return }
    if let deadline = state.deadline {
      arm(after: deadline - now, generation: state.generation)
    } else {
      timer.cancel()
    }
  }

  /// A pan motion came to rest or was interrupted: settle `settleDelay` from now unless another
  /// pan begins first. This preempts the settle a previous stop scheduled.
  public func panDidStop() {
    let reading = timing.now()
    state.withLock { state in stop(&state, reading: reading) }
  }

  /// A pan stopped, under the lock: settle `settleDelay` from now, or at the `maxWait` deadline
  /// if that comes first, or at once if it has passed during the pan.
  func stop(_ state: inout State, reading: Duration) {
    let now = state.event(at: reading, maxWait: maxWait)
    state.panning = false
    guard state.overdue else {
      let delay = state.deadline.map { min(settleDelay, $0 - now) } ?? settleDelay
      arm(after: delay, generation: state.generation)
      return
    }
    timer.cancel()
    settle(&state)
  }

  /// Whether the panning has settled: true before the first pan event, and from each settle to
  /// the next pan event.
  public var isSettled: Bool {
    state.withLock { $0.settled }
  }

  private func arm(after delay: Duration, generation: UInt64) {
    timer.delay(for: delay) { [weak self] in self?.timerFired(generation: generation) }
  }

  private func timerFired(generation: UInt64) {
    let reading = timing.now()
    timing.firing { fired in
      state.withLock { state in fire(&state, generation: generation, reading: reading, fired) }
    }
  }

  /// The timer named `generation` fired, under the lock.
  private func fire(
    _ state: inout State, generation: UInt64, reading: Duration, _ fired: FiredCallbacks?
  ) {
    state.latest = max(state.latest, reading)
    // A stale firing still counts once `maxWait` has passed: the pan event that raced it
    // belongs to this settle, and the timer that event armed is superseded.
    let overdue = state.deadline.map { state.latest >= $0 } ?? false
    guard generation == state.generation || (overdue && !state.settled) else { return }
    if state.panning {
      state.overdue = true
    } else {
      if generation != state.generation { timer.cancel() }
      settle(&state, tracking: fired)
    }
  }

  /// Called under the lock: enqueueing the callback there keeps settles in order.
  private func settle(_ state: inout State, tracking fired: FiredCallbacks? = nil) {
    state.overdue = false
    state.settled = true
    state.deadline = nil
    state.generation &+= 1
    callbacks.send(onSettle, tracking: fired)
  }
}
