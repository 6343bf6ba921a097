@testable import DelayedPreemptiveDispatch

/// The ``DriverHarness`` of one line, as the single queue and actor build their driver: the
/// task given last is kept, and tickets learn preemptions on demand. An outcome that changes
/// once known is recorded in `duplicateResolutions`.
struct MachineHarness {
  typealias Lines = SingleLine<String>
  typealias Harness = DriverHarness<Lines>
  typealias Machine = PreemptionStateMachine<String>
  typealias Run = Harness.Run
  typealias Owner = Harness.Owner
  static let line = Lines.LineID()

  private(set) var harness: Harness
  private var known: [DelayOutcome?] = []
  private var knownOutcomes: [UInt64: DelayOutcome] = [:]
  private(set) var duplicateResolutions: [UInt64] = []

  init(options: DelayOptions = DelayOptions(), work: String? = nil) {
    var driver = BurstDriver<Lines>(
      options: options, maxConcurrentTasks: 1, keepsLastWork: true, tracking: .onDemand)
    driver.installLine(Self.line, work: work)
    harness = Harness(driver: driver)
  }

  var driver: BurstDriver<Lines> { harness.driver }
  var machine: Machine { harness.driver.lines[at: 0].machine }
  var now: Int64 { harness.now }
  var timers: [TimerRequest] { harness.timers }
  var runs: [Run] { harness.runs[Self.line] ?? [] }
  var tickets: [DelayTicket] { harness.tickets[Self.line] ?? [] }
  var armedByJoin: Int { harness.armedByJoin }

  static func tick(_ milliseconds: Int64) -> TimelineInstant {
    Harness.instant(milliseconds)
  }

  /// Every submission's outcome as its ticket reports it. Outcomes already known are read
  /// again by ``recheckKnownOutcomes()``.
  var outcomes: [UInt64: DelayOutcome] {
    mutating get {
      let current = harness.outcomes(of: Self.line)
      while known.count < tickets.count { known.append(nil) }
      for (submission, outcome) in current where known[Int(submission)] == nil {
        known[Int(submission)] = outcome
        knownOutcomes[submission] = outcome
      }
      return knownOutcomes
    }
  }

  /// Reads every known outcome again and records those that changed.
  mutating func recheckKnownOutcomes() {
    for (submission, ticket) in tickets.enumerated() where submission < known.count {
      guard let earlier = known[submission] else { continue }
      if ticket.knownOutcome != earlier { duplicateResolutions.append(UInt64(submission)) }
    }
  }

  /// Submits at the current time; returns the submission's number (0, 1, … over the accepted
  /// ones), or nil when rejected.
  @discardableResult
  mutating func delay(_ milliseconds: Int64, _ work: String? = nil) -> UInt64? {
    let ticket = harness.delay(Self.line, milliseconds, work)
    guard ticket.record != nil else { return nil }
    return UInt64(tickets.count - 1)
  }

  mutating func cancel() {
    harness.perform(harness.driver.cancel(Self.line))
  }

  mutating func flush() {
    harness.flush(Self.line)
  }

  /// Moves time to `now + milliseconds`, firing every timer due on the way, in order.
  mutating func advance(by milliseconds: Int64) {
    harness.advance(by: milliseconds)
  }

  /// Moves time to `now + milliseconds` without firing the timers due on the way.
  mutating func hold(by milliseconds: Int64) {
    harness.hold(by: milliseconds)
  }
}
