/// The state of a ``ManualClock``, changed only under its lock.
struct ManualClockState {
  enum Wakeup {
    case action(@Sendable () async -> Void)
    /// A sleeping task; `flight` names the timer's work it belongs to, if any.
    case sleeper(CheckedContinuation<Void, any Error>, flight: UInt64?)
    /// A run started at once outside `advance` (``ManualClock/startRun(_:)``), already flying:
    /// `advance` awaits it as a timer's work, until it returns or sleeps on the clock.
    case flight(UInt64)
  }

  struct Timer {
    var deadline: ManualClock.Instant
    var id: UInt64
    var wakeup: Wakeup
  }

  /// The work a fired timer started, as `advance` sees it.
  enum Flight {
    /// Running; `advance` may be waiting for it to finish or park.
    case running(waiter: CheckedContinuation<Void, Never>?)
    /// Sleeping on the clock, so `advance` goes on and resumes it at the sleep's deadline.
    case parked
  }

  var now = ManualClock.Instant(offset: .zero)
  var timers: [Timer] = []
  var nextID: UInt64 = 0
  /// Sleepers between `sleep` and their registration, and those cancelled in that window.
  var arrivingSleepers: Set<UInt64> = []
  var cancelledSleepers: Set<UInt64> = []
  /// Whether a call of `advance` is running.
  var isAdvancing = false
  /// The work of fired timers that has neither returned nor been abandoned.
  var flights: [UInt64: Flight] = [:]

  mutating func add(_ wakeup: Wakeup, at deadline: ManualClock.Instant, id: UInt64) {
    timers.append(Timer(deadline: deadline, id: id, wakeup: wakeup))
  }

  mutating func makeID() -> UInt64 {
    defer { nextID += 1 }
    return nextID
  }

  /// Timers and sleepers waiting for a later instant: every entry but a flight's.
  var waitingCount: Int {
    timers.count { timer in
      if case .flight = timer.wakeup { return false }
      return true
    }
  }

  /// Removes the earliest timer due by `target`, moving `now` to its deadline; when none is
  /// due, moves `now` to `target`. A run already flying comes first: it started at an instant
  /// already reached, and the timers due at that instant after it wait for it, as they wait for
  /// the runs of a timer's work.
  mutating func popDue(by target: ManualClock.Instant) -> Timer? {
    if let flight = timers.firstIndex(where: { timer in
      if case .flight = timer.wakeup { return true }
      return false
    }) {
      return timers.remove(at: flight)
    }
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

  /// Starts tracking the work of a fired timer; returns its name.
  mutating func launchFlight() -> UInt64 {
    let id = makeID()
    flights[id] = .running(waiter: nil)
    return id
  }

  /// The flight `id` sleeps on the clock: returns the `advance` waiting for it, to resume.
  mutating func park(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
    guard case .running(let waiter) = flights[id] else { return nil }
    flights[id] = .parked
    return waiter
  }

  /// A sleeper of flight `id` is due: whether the flight was parked, and so runs again.
  mutating func unpark(_ id: UInt64) -> Bool {
    guard case .parked = flights[id] else { return false }
    flights[id] = .running(waiter: nil)
    return true
  }

  /// The flight `id` returned: returns the `advance` waiting for it, to resume.
  mutating func land(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
    guard case .running(let waiter) = flights.removeValue(forKey: id) else { return nil }
    return waiter
  }

  /// Makes `waiter` wait until flight `id` parks or returns; false when it already has.
  mutating func wait(for id: UInt64, waiter: CheckedContinuation<Void, Never>) -> Bool {
    guard case .running(nil) = flights[id] else { return false }
    flights[id] = .running(waiter: waiter)
    return true
  }
}
