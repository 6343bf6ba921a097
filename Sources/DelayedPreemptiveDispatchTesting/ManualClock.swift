@_spi(Preconditions) import DelayedPreemptiveDispatch

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
/// the target. A timer scheduled with a zero or negative delay is due at once, and fires on the
/// next `advance`, even `advance(by: .zero)`; never on its own, so what a test sees does not
/// depend on thread timing.
///
/// When the work of a due timer, or a task it started, sleeps on this same clock, `advance`
/// goes on while it sleeps and resumes it at the sleep's deadline, in deadline order with the
/// other timers: in the same `advance` when that reaches the deadline, in a later one
/// otherwise. So a task that does `try await clock.sleep(for: .milliseconds(5))` works, and
/// `advance` awaits what it does after waking. Other sleepers of ``sleep(until:tolerance:)``
/// are resumed in the same order, but what they do after waking is not awaited.
///
/// Calls of `advance` must not overlap: a second call while one is still running, from another
/// task or from inside the work of a timer, stops the program with a message.
///
/// A run of an actor or keyed actor that a submission started at once (a zero delay, a deadline
/// already reached, a `leading` run: rule T5) is awaited by the next `advance` before any timer,
/// exactly as a due timer's work is: until it returns, or until it sleeps on this clock, and
/// then `advance` goes on and resumes it at the sleep's deadline.
///
/// Runs that wait for no timer start at once, outside `advance`: a `leading` run, and the
/// queue's `flush()`. A test whose result depends on when they run relative to the clock
/// awaits them before it advances: the ticket of the submission that started the burst
/// (`await ticket.outcome` returns `.executed` once the leading run has returned), or, after a
/// `flush()`, the queue's `wait()` (the actor's `flush()` returns after the run by itself).
/// Do not call the queue's `wait()` while a burst is still pending on this clock: it returns
/// only when the burst ends, which needs an `advance`, and with `leading` a burst stays pending
/// after its leading run until its trailing deadline, so the test would hang.
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

  private let state = LockBox(ManualClockState())
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
    state.withLock { $0.waitingCount }
  }

  /// Moves time forward and returns once every timer due by the new time has fired and every
  /// task it started has returned, in deadline order. A negative duration counts as zero.
  ///
  /// Work that sleeps on this clock until after the new time has not returned yet: it resumes
  /// in the `advance` that reaches its deadline.
  public func advance(by duration: Duration) async {
    let target = state.withLock { $0.now.advanced(by: max(duration, .zero)) }
    await advance(to: target)
  }

  /// Moves time forward to `target`, like ``advance(by:)``; an instant in the past fires what
  /// is due now and leaves the time as it is.
  ///
  /// - Precondition: no other call of `advance` on this clock is running, including one inside
  ///   the work a timer started; the program stops with a message otherwise.
  public func advance(to target: Instant) async {
    let overlapping = state.withLock { state in
      defer { state.isAdvancing = true }
      return state.isAdvancing
    }
    requireArgument(
      !overlapping,
      "ManualClock.advance was called while another advance of the same clock was still "
        + "running; await each advance before starting the next, and never advance from inside "
        + "the work a timer started")
    while let timer = state.withLock({ $0.popDue(by: target) }) {
      switch timer.wakeup {
      case .action(let action):
        await run(action)
      case .sleeper(let continuation, let flight):
        // A sleep of a timer's work: that work runs again, and is awaited like a new timer's.
        let unparked = flight.map { flight in state.withLock { $0.unpark(flight) } } ?? false
        continuation.resume()
        if unparked, let flight { await settle(flight) }
      case .flight(let flight):
        await settle(flight)
      }
    }
    state.withLock { $0.isAdvancing = false }
  }

  /// Suspends until ``advance(by:)`` reaches `deadline`; throws `CancellationError` if the
  /// calling task is cancelled first.
  ///
  /// Called from the work a due timer started (or a task it started), it lets `advance` go on
  /// meanwhile, and resumes that work at `deadline`, in the same `advance` when it reaches that
  /// far, or in a later one.
  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    let id = state.withLock { state in
      let id = state.makeID()
      state.arrivingSleepers.insert(id)
      return id
    }
    let flight = Self.currentFlight.flatMap { $0.clock == ObjectIdentifier(self) ? $0.id : nil }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let (result, advance) = state.withLock {
          state -> (Result<Void, any Error>?, CheckedContinuation<Void, Never>?) in
          state.arrivingSleepers.remove(id)
          if state.cancelledSleepers.remove(id) != nil {
            return (.failure(CancellationError()), nil)
          }
          if deadline <= state.now { return (.success(()), nil) }
          state.add(.sleeper(continuation, flight: flight), at: deadline, id: id)
          return (nil, flight.flatMap { state.park($0) })
        }
        if let result { continuation.resume(with: result) }
        advance?.resume()
      }
    } onCancel: {
      let sleeper = state.withLock { state -> CheckedContinuation<Void, any Error>? in
        guard let index = state.timers.firstIndex(where: { $0.id == id }) else {
          // Not registered yet: make the registration throw. Already resumed: nothing to do.
          if state.arrivingSleepers.contains(id) { state.cancelledSleepers.insert(id) }
          return nil
        }
        guard case .sleeper(let continuation, _) = state.timers.remove(at: index).wakeup else {
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

  /// Which timer's work, on which clock, the current task belongs to.
  private struct FlightName: Sendable {
    var clock: ObjectIdentifier
    var id: UInt64
  }

  @TaskLocal private static var currentFlight: FlightName?

  /// Runs the work of a fired timer in a task of its own, and waits until it returns or sleeps
  /// on this clock.
  private func run(_ action: @escaping @Sendable () async -> Void) async {
    await settle(launch(action, id: state.withLock { $0.launchFlight() }))
  }

  /// Starts `action` in a task of its own as the flight `id`: a sleep on this clock inside it,
  /// or inside a task it starts, parks the flight.
  private func launch(_ action: @escaping @Sendable () async -> Void, id: UInt64) -> UInt64 {
    let name = FlightName(clock: ObjectIdentifier(self), id: id)
    Task { [state] in
      await Self.$currentFlight.withValue(name) { await action() }
      state.withLock { $0.land(id) }?.resume()
    }
    return id
  }

  /// Waits until the flight `id` returns or sleeps on this clock.
  private func settle(_ id: UInt64) async {
    await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
      if !state.withLock({ $0.wait(for: id, waiter: waiter) }) { waiter.resume() }
    }
  }
}

extension ManualClock: RunTrackingClock {
  /// Starts `run`, an actor's worker, as the work of a timer due now: ``advance(by:)`` (the one
  /// running, or the next) awaits it before anything else, until it returns or sleeps on this
  /// clock, and then goes on, resuming it at its sleep's deadline. So a run that a submission
  /// started at once (rule T5) is awaited as a run that a timer started, and neither holds up
  /// an `advance` while it sleeps.
  @usableFromInline
  package func startRun(_ run: @escaping @Sendable () async -> Void) {
    let id = state.withLock { state in
      let id = state.launchFlight()
      state.add(.flight(id), at: state.now, id: state.makeID())
      return id
    }
    _ = launch(run, id: id)
  }
}
