import Dispatch

/// Counts wrong passcodes and locks out after too many in a row: the count resets after a quiet
/// `window`, and a lockout ends by itself after `lockoutDuration`.
///
/// ```swift
/// let lockout = PasscodeLockout(
///   maxFailures: 3, window: .seconds(60), lockoutDuration: .seconds(60),
///   callbackActor: MainActor.shared
/// ) { state in
///   keypad.isEnabled = state != .lockedOut   // a @MainActor view, updated in order
/// }
/// func passcodeEntered(_ code: String) {
///   if code == expected { lockout.recordSuccess(); unlock() } else { lockout.recordFailure() }
/// }
/// ```
///
/// - Rules: failures count while each follows the previous one within `window`; once `window`
///   passes with no failure, the count returns to 0. The failure that brings the count to
///   `maxFailures` locks out; while locked out, failures count nothing. After the lockout the
///   state is `.open(failures: 0)`. A failure that races the window's end by a hair is ordered
///   by whichever takes the lock first.
/// - Pending work: one timer at a time, for the window or the lockout, by the rules every queue
///   follows (`.restart`): each failure moves the pending window end, and a lockout replaces it.
///   A failure and a firing of the timer are decided under one lock. A pending timer does not
///   keep the lockout alive; releasing it cancels the timer and no callback follows.
/// - Callbacks: `onChange` runs on the main actor with `callbackActor: MainActor.shared`, or on
///   `callbackQueue`, or on a serial queue the lockout owns, once
///   per state change and in the order of the changes, never under a lock. A concurrent
///   `callbackQueue` receives them in order but may run them at the same time, or out of order.
/// - Tests: on a ``SchedulingClock`` such as `ManualClock`, `advance(by:)` returns after the
///   callbacks that its timers caused have run. A callback that a method call caused directly is
///   only enqueued, by that call; a serial `callbackQueue` runs it
///   before any later one.
/// - Extras: escalating lockouts (``init(maxFailures:window:lockoutDurations:callbackQueue:onChange:)``)
///   and a ``Snapshot`` to save and restore across a relaunch.
/// - Threat model: a user who wants to end a lockout early may relaunch the app, reboot the
///   device or set its wall clock. A ``Snapshot`` records a ``MonotonicReference`` (boot session
///   and uptime): restored in the same boot session, the time left is measured on the uptime,
///   which the user cannot set; after a reboot, the lockout gets at least the time it had left
///   at the snapshot. Setting the wall clock back cannot lengthen it beyond one full lockout.
///   The lockout cannot defend a snapshot the user edits: store it where they cannot write.
/// - Thread safety: every method may be called from any thread. The lockout reads its clock and
///   arms its timer only outside its lock, and enqueues its callbacks, which runs none of them,
///   before it releases the lock, in the order of its changes. So its clock may call back into
///   it.
public final class PasscodeLockout: Sendable {
  /// The working part; the race tests reach its lock and its timer.
  let core: AdapterCore<LockoutRules>

  /// Creates a lockout on real time.
  ///
  /// - Parameters:
  ///   - maxFailures: The failures, each within `window` of the previous one, that lock out.
  ///   - window: How long a failure stays counted when no other follows.
  ///   - lockoutDuration: How long a lockout lasts.
  ///   - callbackQueue: Where `onChange` runs; `nil` for a serial queue the lockout owns.
  ///   - onChange: Called with each new state: `.open(failures:)` or `.lockedOut`.
  /// - Precondition: `maxFailures >= 1`; `window` and `lockoutDuration` are positive.
  public convenience init(
    maxFailures: Int = 3, window: Duration = .seconds(60),
    lockoutDuration: Duration = .seconds(60), callbackQueue: DispatchQueue? = nil,
    onChange: (@Sendable (State) -> Void)? = nil
  ) {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: [lockoutDuration],
      timing: .realTime, callbackQueue: callbackQueue, onChange: onChange)
  }

  /// Creates a lockout whose window and lockout follow `clock`; `ManualClock` for tests.
  ///
  /// The same as ``init(maxFailures:window:lockoutDuration:callbackQueue:onChange:)`` otherwise.
  public convenience init<C: Clock>(
    maxFailures: Int = 3, window: Duration = .seconds(60),
    lockoutDuration: Duration = .seconds(60), clock: C, callbackQueue: DispatchQueue? = nil,
    onChange: (@Sendable (State) -> Void)? = nil
  ) where C.Duration == Duration {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: [lockoutDuration],
      timing: .clock(clock), callbackQueue: callbackQueue, onChange: onChange)
  }

  /// Creates a lockout whose successive lockouts grow, as on a phone's passcode screen.
  ///
  /// The first lockout lasts `lockoutDurations[0]`, the second `lockoutDurations[1]`, and so
  /// on; the last duration repeats. ``recordSuccess()`` (while open) starts again at the first.
  ///
  /// ```swift
  /// let lockout = PasscodeLockout(
  ///   maxFailures: 5, lockoutDurations: [.seconds(60), .seconds(300), .seconds(900), .seconds(3600)])
  /// ```
  ///
  /// - Precondition: `lockoutDurations` is not empty and each is positive; `maxFailures >= 1`;
  ///   `window` is positive.
  public convenience init(
    maxFailures: Int = 3, window: Duration = .seconds(60), lockoutDurations: [Duration],
    callbackQueue: DispatchQueue? = nil, onChange: (@Sendable (State) -> Void)? = nil
  ) {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: lockoutDurations,
      timing: .realTime, callbackQueue: callbackQueue, onChange: onChange)
  }

  /// Creates an escalating lockout that follows `clock`; `ManualClock` for tests.
  public convenience init<C: Clock>(
    maxFailures: Int = 3, window: Duration = .seconds(60), lockoutDurations: [Duration],
    clock: C, callbackQueue: DispatchQueue? = nil, onChange: (@Sendable (State) -> Void)? = nil
  ) where C.Duration == Duration {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: lockoutDurations,
      timing: .clock(clock), callbackQueue: callbackQueue, onChange: onChange)
  }

  init(
    maxFailures: Int, window: Duration, lockoutDurations: [Duration], timing: AdapterTiming,
    callbackQueue: DispatchQueue?, onChange: (@Sendable (State) -> Void)?
  ) {
    core = AdapterCore(
      label: "PasscodeLockout",
      rules: LockoutRules(
        maxFailures: maxFailures, window: window, lockoutDurations: lockoutDurations,
        onChange: onChange),
      timing: timing, callbackQueue: callbackQueue)
  }

  /// Counts a wrong passcode and returns the resulting state.
  ///
  /// While open, it counts the failure and restarts the window; the failure that reaches
  /// `maxFailures` locks out. While locked out, it counts nothing and returns `.lockedOut`.
  @discardableResult
  public func recordFailure() -> State {
    core.update { rules, reading in rules.failure(at: reading) }
  }

  /// Records a right passcode: sets `.open(failures: 0)`, cancels the window's timer and starts
  /// escalation again at the first lockout duration. It does nothing while locked out: a success
  /// does not end a lockout.
  public func recordSuccess() {
    core.update { rules, _ in rules.success() }
  }

  /// The current state.
  public var state: State {
    core.state.withLock { $0.state }
  }

  /// How long the current lockout still lasts; `nil` while open.
  public var remainingLockout: Duration? {
    core.update { rules, reading in rules.remainingLockout(at: reading) }
  }
}
