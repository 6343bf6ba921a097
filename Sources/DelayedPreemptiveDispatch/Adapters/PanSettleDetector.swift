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
///   (plus scheduling latency), and pans that never pause still settle each `maxWait`: an event
///   that comes once `maxWait` is due, before the timer fires, belongs to that settle.
/// - Pending work: one timer at a time, for pans until a settle that are one burst of the rules
///   every queue follows (`.restart`, `maxWait`); each stop moves the pending settle, and a pan
///   in motion holds it off. An event and a firing of the timer are decided under one lock. A
///   pending timer does not keep the detector alive; releasing it cancels the timer, and no
///   callback follows.
/// - Callbacks: `onSettle` runs on the main actor with `callbackActor: MainActor.shared`, or on
///   `callbackQueue`, or on a serial queue the detector owns,
///   once per settle and never under a lock. A concurrent `callbackQueue` may run two of them at
///   the same time.
/// - Tests: on a ``SchedulingClock`` such as `ManualClock`, `advance(by:)` returns after the
///   callbacks that its timers caused have run. A callback that a method call caused directly is
///   only enqueued, by that call; a serial `callbackQueue` runs it
///   before any later one.
/// - Thread safety: every method may be called from any thread. The detector reads its clock and
///   arms its timer only outside its lock, and enqueues its callbacks, which runs none of them,
///   before it releases the lock, in the order of its changes. So its clock may call back into
///   it.
public final class PanSettleDetector: Sendable {
  private let core: AdapterCore<PanSettleRules>

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
    core = AdapterCore(
      label: "PanSettleDetector",
      rules: PanSettleRules(
        settleDelay: settleDelay, onSettle: onSettle, timer: AdapterTimer(maxWait: maxWait)),
      timing: timing, callbackQueue: callbackQueue)
  }

  /// A pan motion started: no settle while panning. The pending settle is held off until the
  /// next ``panDidStop()`` (with `maxWait`, the bound still counts).
  public func panDidBegin() {
    core.update { rules, reading in rules.begin(at: reading) }
  }

  /// A pan motion came to rest or was interrupted: settle `settleDelay` from now unless another
  /// pan begins first. This preempts the settle a previous stop scheduled.
  public func panDidStop() {
    core.update { rules, reading in stop(&rules, reading: reading) }
  }

  /// Whether the panning has settled: true before the first pan event, and from each settle to
  /// the next pan event.
  public var isSettled: Bool {
    core.state.withLock { $0.isSettled }
  }

  /// A pan stopped, under the lock (the race tests play it while a firing waits for the lock).
  func stop(_ rules: inout PanSettleRules, reading: Duration) {
    rules.stop(at: reading)
  }

  // The core's parts, for the race tests.
  var state: LockBox<PanSettleRules> { core.state }
  var timer: any BurstTimer { core.timer }
  var timing: AdapterTiming { core.timing }
}
