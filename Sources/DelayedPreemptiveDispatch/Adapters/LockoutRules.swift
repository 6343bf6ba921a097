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
  /// The latest clock reading seen. Readings are taken before the lock, so a thread may bring an
  /// older one than the last; the rules keep time moving forward.
  private(set) var latest = Duration.zero

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

  /// Takes a clock reading and returns the instant the rules act at: never before an earlier one.
  mutating func observe(_ reading: Duration) -> Duration {
    latest = max(latest, reading)
    return latest
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

  /// How much time passed since a snapshot was taken.
  enum Elapsed: Equatable {
    /// Measured on a monotonic reference: each deadline has the time it had left at the
    /// snapshot, minus this.
    case uptime(Duration)
    /// An older snapshot with no monotonic reference: deadlines are read against the wall clock
    /// at these seconds since the reference date.
    case wallClock(seconds: Double)
  }

  /// Replaces the whole state with `snapshot`, restored at `now` on the time line after
  /// `elapsed`. Remaining times are capped at a full window and a full lockout, so a wall clock
  /// set back cannot lengthen them.
  mutating func restore(
    _ snapshot: PasscodeLockout.Snapshot, elapsed: Elapsed, at now: Duration
  ) -> Transition {
    func remaining(recorded: Duration?, wallDeadline: Double?) -> Duration? {
      switch elapsed {
      case .uptime(let passed):
        return recorded.map { $0 - passed }
      case .wallClock(let seconds):
        return wallDeadline.map { .seconds($0 - seconds) }
      }
    }
    let before = state
    lockouts = max(snapshot.lockouts, 0)
    failures = 0
    windowEnd = nil
    lockoutEnd = nil
    var timer = TimerChange.cancel
    let lockoutLeft = remaining(
      recorded: snapshot.lockedOutFor, wallDeadline: snapshot.lockedOutUntilSeconds)
    let windowLeft = remaining(
      recorded: snapshot.countResetsIn, wallDeadline: snapshot.countResetsAtSeconds)
    if let lockoutLeft, lockoutLeft > .zero {
      let full = lockoutDuration(afterLockouts: lockouts - 1)
      let left = min(lockoutLeft, full)
      lockoutEnd = now + left
      timer = arm(after: left)
    } else if snapshot.failures > 0, maxFailures > 1, let windowLeft, windowLeft > .zero {
      let left = min(windowLeft, window)
      failures = min(snapshot.failures, maxFailures - 1)
      windowEnd = now + left
      timer = arm(after: left)
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
