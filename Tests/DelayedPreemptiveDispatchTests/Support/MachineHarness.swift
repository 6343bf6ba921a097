@testable import DelayedPreemptiveDispatch

/// Drives a `BurstDriver` the way a shell does, on a time line in milliseconds: it keeps every
/// armed timer (stale ones too), fires them in deadline order, runs decided runs in the order the
/// driver gives them, and reads each submission's outcome from its real ticket, so the rules
/// that resolve tickets are the ones the shells ship. An outcome that changes once known is
/// recorded in `duplicateResolutions`.
struct MachineHarness {
  typealias Driver = BurstDriver<String>
  typealias Machine = PreemptionStateMachine<String>

  struct Run: Equatable, CustomStringConvertible {
    var work: String
    var at: Int64
    var description: String { "\(work)@\(at)" }
  }

  /// Tickets need an owner; the harness synchronizes records itself, so it does nothing.
  final class Owner: TicketOwner {
    func synchronize(_ record: BurstRecord) async {}
  }

  private(set) var driver: Driver
  private let owner = Owner()
  private(set) var now: Int64 = 0
  private(set) var timers: [TimerRequest] = []
  private(set) var runs: [Run] = []
  /// The tickets of accepted submissions, by submission number.
  private(set) var tickets: [DelayTicket] = []
  private var known: [DelayOutcome?] = []
  private var knownOutcomes: [UInt64: DelayOutcome] = [:]
  private(set) var armedByJoin = 0
  private(set) var duplicateResolutions: [UInt64] = []

  init(options: DelayOptions = DelayOptions(), work: String? = nil) {
    driver = Driver(options: options, work: work)
  }

  var machine: Machine { driver.machine }

  static func tick(_ milliseconds: Int64) -> Tick {
    Tick(nanoseconds: UInt64(milliseconds) * 1_000_000)
  }

  /// Every submission's outcome as its ticket reports it; preemptions are brought up to date
  /// through the driver first, as an awaiting ticket would. Outcomes already known are read
  /// again by ``recheckKnownOutcomes()``.
  var outcomes: [UInt64: DelayOutcome] {
    mutating get {
      for (submission, ticket) in tickets.enumerated() where known[submission] == nil {
        if ticket.knownOutcome == nil, let (record, _) = ticket.record {
          driver.synchronize(record)
        }
        if let outcome = ticket.knownOutcome {
          known[submission] = outcome
          knownOutcomes[UInt64(submission)] = outcome
        }
      }
      return knownOutcomes
    }
  }

  /// Reads every known outcome again and records those that changed.
  mutating func recheckKnownOutcomes() {
    for (submission, ticket) in tickets.enumerated() {
      guard let earlier = known[submission] else { continue }
      if ticket.knownOutcome != earlier { duplicateResolutions.append(UInt64(submission)) }
    }
  }

  /// Submits at the current time; returns the submission's number (0, 1, … over the accepted
  /// ones), or nil when rejected.
  @discardableResult
  mutating func delay(_ milliseconds: Int64, _ work: String? = nil) -> UInt64? {
    let (ticket, effects) = driver.delay(
      .nanoseconds(milliseconds * 1_000_000), now: Self.tick(now), work: work, owner: owner)
    if !effects.startedBurst, effects.timer != nil { armedByJoin += 1 }
    perform(effects)
    guard ticket.record != nil else { return nil }
    tickets.append(ticket)
    known.append(nil)
    return UInt64(tickets.count - 1)
  }

  mutating func cancel() {
    perform(driver.cancel())
  }

  mutating func flush() {
    perform(driver.flush())
  }

  /// Moves time to `now + milliseconds`, firing every timer due on the way, in order.
  mutating func advance(by milliseconds: Int64) {
    let target = now + max(milliseconds, 0)
    while let index = timers.indices.min(by: { timers[$0].deadline < timers[$1].deadline }),
      timers[index].deadline <= Self.tick(target)
    {
      let timer = timers.remove(at: index)
      now = max(now, Int64(timer.deadline.nanoseconds / 1_000_000))
      perform(driver.timerFired(at: timer.deadline, generation: timer.generation))
    }
    now = target
  }

  /// Performs `effects` with the shells' own interpreter: a decided run runs at once.
  private mutating func perform(_ effects: BurstEffects) {
    effects.perform(
      start: { count in
        for _ in 0..<count {
          let run = driver.takeRun()
          runs.append(Run(work: run.work, at: now))
          run.resolve()
          _ = driver.runFinished()
        }
      },
      arm: { timer in
        timers.append(timer)
        _ = driver.install(.none, generation: timer.generation)
      },
      becameIdle: {})
  }
}
