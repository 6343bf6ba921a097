import DelayedPreemptiveDispatch

/// A clock whose time moves only when a test calls ``advance(by:)``, for tests that never sleep.
///
/// Give it to a `DelayedPreemptiveDispatchQueue`, a `DelayedPreemptiveActor` or an adapter
/// through their `clock:` initialiser. Their timers are scheduled on the clock, and `advance`
/// fires every timer that falls due, one at a time in deadline order (ties in the order they
/// were armed), and awaits the work each one starts, so once it returns every task it made due
/// has returned too:
///
/// ```swift
/// let clock = ManualClock()
/// let queue = DelayedPreemptiveDispatchQueue(clock: clock) { saved.increment() }
/// queue.delay(0.5)
/// queue.delay(0.1)                     // .extend: the deadline stays at 0.5 s
/// await clock.advance(by: .milliseconds(499))
/// #expect(saved.value == 0)
/// await clock.advance(by: .milliseconds(1))
/// #expect(saved.value == 1)            // the task ran exactly at 0.5 s
/// ```
///
/// While a due timer's work runs, ``now`` reads that timer's deadline; after `advance` it reads
/// the target. Plain ``sleep(until:tolerance:)`` callers are resumed in the same order, but what
/// they do after waking is not awaited. Calls of `advance` should not overlap.
///
/// Runs that wait for no timer start at once instead, outside `advance`: a `leading` run, and
/// the queue's `flush()`. A test whose result depends on when they run relative to the clock
/// awaits their ticket (or the queue's `wait()`) before it advances.
public final class ManualClock: Clock, SchedulingClock, Sendable {
  /// An instant of a ``ManualClock``: the time since the clock was created.
  public struct Instant: InstantProtocol, Sendable {
    /// The time since the clock was created.
    public var offset: Duration

    /// Creates the instant `offset` after the clock's creation.
    public init(offset: Duration) {
      self.offset = offset
    }

    /// The instant `duration` after this one.
    public func advanced(by duration: Duration) -> Instant {
      Instant(offset: offset + duration)
    }

    /// The time from this instant to `other`; negative when `other` is earlier.
    public func duration(to other: Instant) -> Duration {
      other.offset - offset
    }

    /// Whether `lhs` comes before `rhs`.
    public static func < (lhs: Instant, rhs: Instant) -> Bool {
      lhs.offset < rhs.offset
    }
  }

  private enum Wakeup {
    case action(@Sendable () async -> Void)
    case sleeper(CheckedContinuation<Void, any Error>)
  }

  private struct Timer {
    var deadline: Instant
    var id: UInt64
    var wakeup: Wakeup
  }

  private struct State {
    var now = Instant(offset: .zero)
    var timers: [Timer] = []
    var nextID: UInt64 = 0
    /// Sleepers between `sleep` and their registration, and those cancelled in that window.
    var arrivingSleepers: Set<UInt64> = []
    var cancelledSleepers: Set<UInt64> = []

    mutating func add(_ wakeup: Wakeup, at deadline: Instant, id: UInt64) {
      timers.append(Timer(deadline: deadline, id: id, wakeup: wakeup))
    }

    mutating func makeID() -> UInt64 {
      defer { nextID += 1 }
      return nextID
    }

    /// Removes the earliest timer due by `target`, moving `now` to its deadline; when none is
    /// due, moves `now` to `target`.
    mutating func popDue(by target: Instant) -> Timer? {
      let earliest = timers.indices.min { lhs, rhs in
        (timers[lhs].deadline, timers[lhs].id) < (timers[rhs].deadline, timers[rhs].id)
      }
      guard let earliest, timers[earliest].deadline <= target else {
        now = max(now, target)
        return nil
      }
      let timer = timers.remove(at: earliest)
      now = max(now, timer.deadline)
      return timer
    }
  }

  private let state = LockBox(State())
  /// The shortest delay that means "never" to ``schedule(after:tolerance:action:)``.
  private static let never = Duration.nanoseconds(Int64.max)

  /// Creates a clock that reads `Instant(offset: .zero)` until it is advanced.
  public init() {}

  /// The current instant; it changes only inside ``advance(by:)``.
  public var now: Instant {
    state.withLock { $0.now }
  }

  /// Zero: a manual clock resolves any instant exactly.
  public var minimumResolution: Duration {
    .zero
  }

  /// The number of timers and sleepers waiting for a later instant.
  public var pendingTimerCount: Int {
    state.withLock { $0.timers.count }
  }

  /// Moves time forward and returns once every timer due by the new time has fired and every
  /// task it started has returned, in deadline order. A negative duration counts as zero.
  public func advance(by duration: Duration) async {
    let target = state.withLock { $0.now.advanced(by: max(duration, .zero)) }
    await advance(to: target)
  }

  /// Moves time forward to `target`, like ``advance(by:)``; an instant in the past fires what
  /// is due now and leaves the time as it is.
  public func advance(to target: Instant) async {
    while let timer = state.withLock({ $0.popDue(by: target) }) {
      switch timer.wakeup {
      case .action(let action): await action()
      case .sleeper(let continuation): continuation.resume()
      }
    }
  }

  /// Suspends until ``advance(by:)`` reaches `deadline`; throws `CancellationError` if the
  /// calling task is cancelled first.
  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    let id = state.withLock { state in
      let id = state.makeID()
      state.arrivingSleepers.insert(id)
      return id
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let result: Result<Void, any Error>? = state.withLock { state in
          state.arrivingSleepers.remove(id)
          if state.cancelledSleepers.remove(id) != nil { return .failure(CancellationError()) }
          if deadline <= state.now { return .success(()) }
          state.add(.sleeper(continuation), at: deadline, id: id)
          return nil
        }
        if let result { continuation.resume(with: result) }
      }
    } onCancel: {
      let sleeper = state.withLock { state -> CheckedContinuation<Void, any Error>? in
        guard let index = state.timers.firstIndex(where: { $0.id == id }) else {
          // Not registered yet: make the registration throw. Already resumed: nothing to do.
          if state.arrivingSleepers.contains(id) { state.cancelledSleepers.insert(id) }
          return nil
        }
        guard case .sleeper(let continuation) = state.timers.remove(at: index).wakeup else {
          return nil
        }
        return continuation
      }
      sleeper?.resume(throwing: CancellationError())
    }
  }

  /// Calls `action` when ``advance(by:)`` reaches `delay` past ``now``, and awaits it there.
  ///
  /// A `delay` of `Int64.max` nanoseconds (about 292 years) or more means "never", as
  /// `SchedulingClock` defines it: the action is dropped, so advancing the clock that far runs
  /// nothing.
  public func schedule(
    after delay: Duration, tolerance: Duration?, action: @escaping @Sendable () async -> Void
  ) {
    guard delay < Self.never else { return }
    state.withLock { state in
      let deadline = state.now.advanced(by: max(delay, .zero))
      state.add(.action(action), at: deadline, id: state.makeID())
    }
  }
}
