import DelayedPreemptiveDispatchModel
@testable import DelayedPreemptiveDispatch

/// Drives the shipped ``BurstDriver`` the way a shell does, on a time line in milliseconds: it
/// keeps every armed timer (stale ones too), fires them in deadline order, runs every run a
/// worker takes at once (through the driver's own `nextRuns`), and reads each submission's
/// outcome from its real ticket, so the rules that decide runs and resolve tickets are the ones
/// the shells ship. One harness for one line (`SingleLine`) and for a line per key
/// (`KeyedLines`).
struct DriverHarness<Lines: BurstLines> where Lines.Work == String {
  typealias Run = HarnessRun
  typealias Owner = HarnessOwner

  var driver: BurstDriver<Lines>
  let owner = Owner()
  private(set) var now: Int64 = 0
  private(set) var timers: [TimerRequest] = []
  private(set) var runs: [Lines.LineID: [Run]] = [:]
  /// The tickets of accepted submissions, per line, in submission order.
  private(set) var tickets: [Lines.LineID: [DelayTicket]] = [:]
  private(set) var timersArmed = 0
  /// Timers armed by a submission that joined a pending burst.
  private(set) var armedByJoin = 0

  init(driver: BurstDriver<Lines>) {
    self.driver = driver
  }

  static func instant(_ milliseconds: Int64) -> TimelineInstant {
    TimelineInstant(nanoseconds: UInt64(milliseconds) * 1_000_000)
  }

  /// Submits at the current time; returns the ticket, kept when the submission was accepted.
  @discardableResult
  mutating func delay(_ id: Lines.LineID, _ milliseconds: Int64, _ work: String?) -> DelayTicket {
    let joins = driver.isPending(id)
    let (ticket, effects) = driver.delay(
      id, .nanoseconds(milliseconds * 1_000_000), now: Self.instant(now), work: work,
      owner: owner)
    // A submission that ended its burst may arm a gate for a run waiting for the spacing.
    if joins, effects.timer != nil, effects.endedCount == 0 { armedByJoin += 1 }
    if ticket.record != nil { tickets[id, default: []].append(ticket) }
    perform(effects)
    return ticket
  }

  mutating func flush(_ id: Lines.LineID) {
    perform(driver.flush(id, at: Self.instant(now)))
  }

  mutating func flushAll() {
    perform(driver.flushAll(at: Self.instant(now)))
  }

  /// Moves time to `now + milliseconds`, firing every timer due on the way, in order; a timer
  /// already due (after ``hold(by:)``) fires first, late, at the current time.
  mutating func advance(by milliseconds: Int64) {
    let target = now + max(milliseconds, 0)
    while let index = timers.indices.min(by: { timers[$0].deadline < timers[$1].deadline }),
      timers[index].deadline <= Self.instant(target)
    {
      let timer = timers.remove(at: index)
      now = max(now, Int64(timer.deadline.nanoseconds / 1_000_000))
      perform(driver.timerFired(at: Self.instant(now), generation: timer.generation))
    }
    now = target
  }

  /// Moves time to `now + milliseconds` and fires nothing: the timers due on the way are late,
  /// and fire at the next ``advance(by:)`` (rule T7).
  mutating func hold(by milliseconds: Int64) {
    now += max(milliseconds, 0)
  }

  /// Performs `effects` with the shells' own interpreter; a worker runs the runs it takes at
  /// once.
  mutating func perform(_ effects: BurstEffects) {
    effects.perform(
      startWorkers: { workers in
        for _ in 0..<workers {
          var finished: [Lines.LineID] = []
          while true {
            let (batch, more) = driver.nextRuns(finishing: finished)
            finished = []
            for (id, run) in batch {
              runs[id, default: []].append(Run(work: run.work, at: now))
              run.resolve()
              finished.append(id)
            }
            perform(more)
            if batch.isEmpty { break }
          }
        }
      },
      arm: { timer in
        timers.append(timer)
        timersArmed += 1
        return .none
      },
      install: { driver.install($0, generation: $1) }, becameIdle: {})
  }

  /// The outcomes the line's tickets report, by submission number; preemptions are brought up
  /// to date through the driver first, as an awaiting ticket would.
  mutating func outcomes(of id: Lines.LineID) -> [UInt64: DelayOutcome] {
    var outcomes: [UInt64: DelayOutcome] = [:]
    for (index, ticket) in (tickets[id] ?? []).enumerated() {
      if ticket.knownOutcome == nil, let (record, _) = ticket.record {
        driver.synchronize(record, of: id)
      }
      if let outcome = ticket.knownOutcome { outcomes[UInt64(index)] = outcome }
    }
    return outcomes
  }
}

/// A run as a harness saw it: its work and when it ran, in milliseconds, as the reference
/// model decides runs.
typealias HarnessRun = ReferenceModel.Run

/// Tickets need an owner; the harnesses synchronize records themselves, so it does nothing.
final class HarnessOwner: TicketOwner {
  func synchronize(_ record: BurstRecord) async {}
}
