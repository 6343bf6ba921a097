/// The rules of ``PasscodeLockout``, with no clock, queue or lock: instants are offsets on the
/// adapter's time line, read through the ``AdapterTimer``, and each change asks the timer for the
/// window or the lockout and enqueues its report.
///
/// The window and the lockout end are kept as instants, for ``PasscodeLockout/remainingLockout``
/// and snapshots; the timer's round is the one that is pending, with no `maxWait`.
struct LockoutRules: AdapterRules {
  let maxFailures: Int
  let window: Duration
  /// The lockout durations for the first, second, … lockout; the last one repeats.
  let lockoutDurations: [Duration]
  let onChange: (@Sendable (PasscodeLockout.State) -> Void)?
  var timer = AdapterTimer(maxWait: nil)

  private(set) var failures = 0
  /// When the window of the current count passes, if a failure is counted.
  private(set) var windowEnd: Duration?
  /// When the current lockout ends, if locked out.
  private(set) var lockoutEnd: Duration?
  /// Lockouts since the last success: the escalation step of the next lockout.
  private(set) var lockouts = 0

  init(
    maxFailures: Int, window: Duration, lockoutDurations: [Duration],
    onChange: (@Sendable (PasscodeLockout.State) -> Void)?
  ) {
    requireArgument(
      maxFailures >= 1, "PasscodeLockout: maxFailures must be at least 1, got \(maxFailures)")
    requireArgument(window > .zero, "PasscodeLockout: window must be positive, got \(window)")
    requireArgument(
      !lockoutDurations.isEmpty, "PasscodeLockout: lockoutDurations must not be empty")
    for duration in lockoutDurations {
      requireArgument(
        duration > .zero, "PasscodeLockout: lockoutDuration must be positive, got \(duration)")
    }
    self.maxFailures = maxFailures
    self.window = window
    self.lockoutDurations = lockoutDurations
    self.onChange = onChange
  }

  var state: PasscodeLockout.State {
    lockoutEnd == nil ? .open(failures: failures) : .lockedOut
  }

  /// The duration of the lockout that follows `lockouts` earlier ones.
  func lockoutDuration(afterLockouts lockouts: Int) -> Duration {
    lockoutDurations[min(max(lockouts, 0), lockoutDurations.count - 1)]
  }

  /// How long the current lockout still lasts at `reading`; `nil` while open.
  mutating func remainingLockout(at reading: Duration) -> Duration? {
    let now = timer.observe(reading)
    return lockoutEnd.map { max($0 - now, .zero) }
  }

  mutating func failure(at reading: Duration) -> PasscodeLockout.State {
    let now = timer.observe(reading)
    guard lockoutEnd == nil else { return .lockedOut }
    failures += 1
    if failures < maxFailures {
      windowEnd = now + window
      timer.arm(after: window, at: now)
    } else {
      let duration = lockoutDuration(afterLockouts: lockouts)
      failures = 0
      windowEnd = nil
      lockoutEnd = now + duration
      lockouts += 1
      timer.arm(after: duration, at: now)
    }
    report(state)
    return state
  }

  mutating func success() {
    guard lockoutEnd == nil else { return }
    lockouts = 0
    windowEnd = nil
    timer.cancel()
    if failures > 0 {
      failures = 0
      report(state)
    }
  }

  /// The window passed, or the lockout ended.
  mutating func timerDue() {
    let before = state
    failures = 0
    windowEnd = nil
    lockoutEnd = nil
    if state != before { report(state) }
  }

  /// How much time passed since a snapshot was taken.
  enum Elapsed: Equatable {
    /// Measured on a monotonic reference: each deadline has the time it had left at the
    /// snapshot, minus this.
    case uptime(Duration)
    /// An older snapshot with no monotonic reference: deadlines are read against the wall clock
    /// at these seconds since the reference date.
    case wallClock(seconds: Double)
  }

  /// Replaces the whole state with `snapshot`, restored at `reading` after `elapsed`. Remaining
  /// times are capped at a full window and a full lockout, so a wall clock set back cannot
  /// lengthen them.
  mutating func restore(
    _ snapshot: PasscodeLockout.Snapshot, elapsed: Elapsed, at reading: Duration
  ) {
    func remaining(recorded: Duration?, wallDeadline: Double?) -> Duration? {
      switch elapsed {
      case .uptime(let passed):
        return recorded.map { $0 - passed }
      case .wallClock(let seconds):
        return wallDeadline.map { .seconds($0 - seconds) }
      }
    }
    let now = timer.observe(reading)
    let before = state
    lockouts = max(snapshot.lockouts, 0)
    failures = 0
    windowEnd = nil
    lockoutEnd = nil
    let lockoutLeft = remaining(
      recorded: snapshot.lockedOutFor, wallDeadline: snapshot.lockedOutUntilSeconds)
    let windowLeft = remaining(
      recorded: snapshot.countResetsIn, wallDeadline: snapshot.countResetsAtSeconds)
    if let lockoutLeft, lockoutLeft > .zero {
      let left = min(lockoutLeft, lockoutDuration(afterLockouts: lockouts - 1))
      lockoutEnd = now + left
      timer.arm(after: left, at: now)
    } else if snapshot.failures > 0, maxFailures > 1, let windowLeft, windowLeft > .zero {
      let left = min(windowLeft, window)
      failures = min(snapshot.failures, maxFailures - 1)
      windowEnd = now + left
      timer.arm(after: left, at: now)
    } else {
      timer.cancel()
    }
    if state != before { report(state) }
  }

  /// Enqueues `state` for `onChange`.
  private mutating func report(_ state: PasscodeLockout.State) {
    guard let onChange else { return }
    timer.send { onChange(state) }
  }
}
