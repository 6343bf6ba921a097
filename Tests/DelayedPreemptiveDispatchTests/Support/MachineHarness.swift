@testable import DelayedPreemptiveDispatch

/// Drives a `PreemptionStateMachine` the way a shell does, on a time line in milliseconds: it
/// keeps every armed timer (stale ones too), fires them in deadline order, and records the runs
/// and the outcome of every submission, failing on any outcome reported twice.
struct MachineHarness {
  typealias Machine = PreemptionStateMachine<Tick, String>

  struct Run: Equatable, CustomStringConvertible {
    var work: String
    var at: Int64
    var description: String { "\(work)@\(at)" }
  }

  private(set) var machine: Machine
  private(set) var now: Int64 = 0
  private(set) var timers: [Machine.TimerRequest] = []
  private(set) var runs: [Run] = []
  private(set) var outcomes: [UInt64: DelayOutcome] = [:]
  private(set) var armedByJoin = 0
  private(set) var duplicateResolutions: [UInt64] = []

  init(options: DelayOptions = DelayOptions(), work: String? = nil) {
    machine = Machine(options: options, work: work)
  }

  static func tick(_ milliseconds: Int64) -> Tick {
    Tick(nanoseconds: UInt64(milliseconds) * 1_000_000)
  }

  /// Submits at the current time; returns the sequence number, or nil when rejected.
  @discardableResult
  mutating func delay(_ milliseconds: Int64, _ work: String? = nil) -> UInt64? {
    let requested = Self.tick(now).advanced(by: .milliseconds(milliseconds))
    switch machine.delay(at: Self.tick(now), until: requested, work: work) {
    case .rejected:
      return nil
    case .started(let seq, let timer, let leading):
      if let timer { timers.append(timer) }
      if let leading {
        runs.append(Run(work: leading, at: now))
        resolve(seq, .executed)
      }
      return seq
    case .joined(let seq, let preempted, let timer):
      if let preempted { resolve(preempted, .preempted) }
      if let timer {
        timers.append(timer)
        armedByJoin += 1
      }
      return seq
    }
  }

  mutating func cancel() {
    if let end = machine.cancel(), let last = end.lastSeq { resolve(last, .cancelled) }
  }

  mutating func flush() {
    switch machine.flush() {
    case .idle, .end: break
    case .run(let work, let end): ran(work, end)
    }
  }

  /// Moves time to `now + milliseconds`, firing every timer due on the way, in order.
  mutating func advance(by milliseconds: Int64) {
    let target = now + max(milliseconds, 0)
    while let index = timers.indices.min(by: { timers[$0].deadline < timers[$1].deadline }),
      timers[index].deadline <= Self.tick(target)
    {
      let timer = timers.remove(at: index)
      now = max(now, Int64(timer.deadline.nanoseconds / 1_000_000))
      switch machine.timerFired(at: timer.deadline, generation: timer.generation) {
      case .stale, .end: break
      case .rearm(let request): timers.append(request)
      case .run(let work, let end): ran(work, end)
      }
    }
    now = target
  }

  private mutating func ran(_ work: String, _ end: Machine.BurstEnd) {
    runs.append(Run(work: work, at: now))
    if let last = end.lastSeq { resolve(last, .executed) }
  }

  private mutating func resolve(_ seq: UInt64, _ outcome: DelayOutcome) {
    if outcomes[seq] != nil { duplicateResolutions.append(seq) }
    outcomes[seq] = outcome
  }
}
