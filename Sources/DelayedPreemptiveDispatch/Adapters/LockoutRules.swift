/// The rules of ``PasscodeLockout``, with no clock, queue or lock: instants come in as offsets
/// on the adapter's time line, and each input returns the state change to report and what to do
/// with the adapter's single timer.
struct LockoutRules: Sendable {
  /// What the adapter must do with its timer after a transition.
  enum TimerChange: Equatable {
    case keep
    /// Arm the timer `after` from now; when it fires, pass `generation` to ``timerFired(generation:)``.
    case arm(after: Duration, generation: UInt64)
    case cancel
  }

  struct Transition: Equatable {
    /// The new state, when it differs from the one before.
    var report: PasscodeLockout.State?
    var timer: TimerChange
  }

  let maxFailures: Int
  let window: Duration
  /// The lockout durations for the first, second, … lockout; the last one repeats.
  let lockoutDurations: [Duration]

  private(set) var failures = 0
  /// When the window of the current count passes, if a failure is counted.
  private(set) var windowEnd: Duration?
  /// When the current lockout ends, if locked out.
  private(set) var lockoutEnd: Duration?
  /// Lockouts since the last success: the escalation step of the next lockout.
  private(set) var lockouts = 0
  /// Names the live timer; a timer that fires with any other generation is stale.
  private var generation: UInt64 = 0

  init(maxFailures: Int, window: Duration, lockoutDurations: [Duration]) {
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
  }

  var state: PasscodeLockout.State {
    lockoutEnd == nil ? .open(failures: failures) : .lockedOut
  }

  /// The duration of the lockout that follows `lockouts` earlier ones.
  func lockoutDuration(afterLockouts lockouts: Int) -> Duration {
    lockoutDurations[min(max(lockouts, 0), lockoutDurations.count - 1)]
  }

  mutating func failure(at now: Duration) -> Transition {
    guard lockoutEnd == nil else { return Transition(report: nil, timer: .keep) }
    failures += 1
    guard failures >= maxFailures else {
      windowEnd = now + window
      return Transition(report: state, timer: arm(after: window))
    }
    let duration = lockoutDuration(afterLockouts: lockouts)
    failures = 0
    windowEnd = nil
    lockoutEnd = now + duration
    lockouts += 1
    return Transition(report: .lockedOut, timer: arm(after: duration))
  }

  mutating func success() -> Transition {
    guard lockoutEnd == nil else { return Transition(report: nil, timer: .keep) }
    lockouts = 0
    generation &+= 1
    windowEnd = nil
    let counted = failures
    failures = 0
    return Transition(report: counted == 0 ? nil : state, timer: .cancel)
  }

  /// The timer named `generation` fired: the window passed, or the lockout ended.
  mutating func timerFired(generation: UInt64) -> PasscodeLockout.State? {
    guard generation == self.generation else { return nil }
    let before = state
    failures = 0
    windowEnd = nil
    lockoutEnd = nil
    return state == before ? nil : state
  }

  /// Replaces the whole state with `snapshot`, taken on the wall clock at `snapshotNow` and
  /// restored at `now` on the time line. Remaining times are capped at a full window and a full
  /// lockout, so a wall clock set back cannot lengthen them.
  mutating func restore(
    _ snapshot: PasscodeLockout.Snapshot, wallSeconds: Double, at now: Duration
  ) -> Transition {
    let before = state
    lockouts = max(snapshot.lockouts, 0)
    failures = 0
    windowEnd = nil
    lockoutEnd = nil
    var timer = TimerChange.cancel
    if let until = snapshot.lockedOutUntilSeconds, until > wallSeconds {
      let full = lockoutDuration(afterLockouts: lockouts - 1)
      let remaining = min(.seconds(until - wallSeconds), full)
      lockoutEnd = now + remaining
      timer = arm(after: remaining)
    } else if snapshot.failures > 0, maxFailures > 1, let resets = snapshot.countResetsAtSeconds,
      resets > wallSeconds
    {
      let remaining = min(.seconds(resets - wallSeconds), window)
      failures = min(snapshot.failures, maxFailures - 1)
      windowEnd = now + remaining
      timer = arm(after: remaining)
    } else {
      generation &+= 1
    }
    return Transition(report: state == before ? nil : state, timer: timer)
  }

  private mutating func arm(after duration: Duration) -> TimerChange {
    generation &+= 1
    return .arm(after: duration, generation: generation)
  }
}
