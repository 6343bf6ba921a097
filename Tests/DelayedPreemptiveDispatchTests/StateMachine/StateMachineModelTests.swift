import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// Random operation sequences, checked step by step against a reference model that computes
/// each burst's deadline directly instead of through timers, generations and re-arming.
///
/// Runs `TestScale.modelSequences` sequences: 10⁴ normally, 10⁶ with `DPD_LONG_TESTS=1`.
@Suite struct StateMachineModelTests {
  /// The obviously correct model: one optional burst, its deadline is a formula.
  struct ReferenceModel {
    struct Burst {
      var start: Int64
      var quietDeadline: Int64
      var leadingSeq: UInt64?
      var lastSeq: UInt64
      var submissions = 1
    }

    let options: DelayOptions
    var lastWork: String?
    var burst: Burst?
    var nextSeq: UInt64 = 0
    var now: Int64 = 0
    var runs: [MachineHarness.Run] = []
    var outcomes: [UInt64: DelayOutcome] = [:]
    /// `minimumSpacing`: the earliest instant the next run may start (T1).
    var nextRunStart: Int64 = 0
    /// Runs decided but waiting for the spacing (T2), and the runs decided behind them, in
    /// order, with the instant each starts.
    var waitingRuns: [(run: MachineHarness.Run, seq: UInt64)] = []

    var spacing: Int64? {
      guard let spacing = options.minimumSpacing, spacing > .zero else { return nil }
      return Int64(spacing.components.seconds * 1_000)
        + spacing.components.attoseconds / 1_000_000_000_000_000
    }

    func deadline(of burst: Burst) -> Int64 {
      var deadline = burst.quietDeadline
      if let maxWait = options.maxWait {
        deadline = min(deadline, burst.start + max(Int64(maxWait.components.seconds * 1_000), 0))
      }
      return max(deadline, nextRunStart)
    }

    /// Runs `work` for submission `seq` at `instant`; its ticket resolves once it has run. An
    /// instant already past (a burst that a late timer or a submission ended at its due
    /// instant, T7) runs now, but the spacing counts from `instant`.
    mutating func run(_ work: String, at instant: Int64, seq: UInt64) {
      if let spacing { nextRunStart = instant + spacing }
      if instant > now || !waitingRuns.isEmpty {
        let start = max(instant, waitingRuns.last?.run.at ?? instant)
        waitingRuns.append((.init(work: work, at: start), seq))
      } else {
        runs.append(.init(work: work, at: now))
        outcomes[seq] = .executed
      }
    }

    /// A burst due by now whose timer has not fired (after ``hold(by:)``) ends at its due
    /// instant, before anything else happens at now (T7).
    mutating func endBurstDue() {
      guard let current = burst, deadline(of: current) <= now else { return }
      endBurst(running: true, at: deadline(of: current))
    }

    /// Time moves on, and no timer fires: they are late until the next ``advance(by:)``.
    mutating func hold(by milliseconds: Int64) {
      now += max(milliseconds, 0)
    }

    mutating func delay(_ milliseconds: Int64, _ work: String?) {
      endBurstDue()
      if let work { lastWork = work }
      guard let lastWork else { return }
      let seq = nextSeq
      nextSeq += 1
      let requested = now + max(milliseconds, 0)
      guard var current = burst else {
        // `leading` runs at once only when the spacing allows a run now (T2).
        let leads = options.leading && nextRunStart <= now
        burst = Burst(
          start: now, quietDeadline: requested, leadingSeq: leads ? seq : nil, lastSeq: seq)
        if leads { run(lastWork, at: now, seq: seq) }
        if options.maxSubmissions == 1 {
          complete()
        } else if deadline(of: burst!) <= now {  // due now: it ends at once (T5)
          endBurst(running: true, at: now)
        }
        return
      }
      if current.lastSeq != current.leadingSeq { outcomes[current.lastSeq] = .preempted }
      current.lastSeq = seq
      current.submissions += 1
      current.quietDeadline =
        options.deadlinePolicy == .extend ? max(current.quietDeadline, requested) : requested
      burst = current
      if let maxSubmissions = options.maxSubmissions, current.submissions >= maxSubmissions {
        complete()
      } else if deadline(of: current) <= now {
        endBurst(running: true, at: now)
      }
    }

    /// `maxSubmissions` reached: the burst ends now, and its run starts once the spacing allows.
    mutating func complete() {
      endBurst(running: true, at: max(now, nextRunStart))
    }

    mutating func endBurst(running: Bool, at instant: Int64) {
      guard let current = burst else { return }
      burst = nil
      guard current.lastSeq != current.leadingSeq else { return }
      if running {
        run(lastWork!, at: instant, seq: current.lastSeq)
      } else {
        outcomes[current.lastSeq] = .cancelled
      }
    }

    /// Moves time on, ending the burst at its due instant on the way; what a held time made
    /// late runs first, at the current time.
    mutating func advance(by milliseconds: Int64) {
      let target = now + max(milliseconds, 0)
      if let current = burst, deadline(of: current) <= target {
        let due = deadline(of: current)
        startWaitingRuns(by: due)
        now = max(now, due)
        endBurst(running: true, at: due)
      }
      startWaitingRuns(by: target)
      now = target
    }

    mutating func startWaitingRuns(by instant: Int64) {
      while let first = waitingRuns.first, first.run.at <= instant {
        waitingRuns.removeFirst()
        runs.append(.init(work: first.run.work, at: max(first.run.at, now)))
        outcomes[first.seq] = .executed
      }
    }
  }

  static func randomOptions(_ random: inout SeededRandomNumberGenerator) -> DelayOptions {
    DelayOptions(
      deadlinePolicy: Bool.random(using: &random) ? .extend : .restart,
      maxWait: Bool.random(using: &random)
        ? nil : .seconds(Int64.random(in: 0...3, using: &random)),
      leading: Int.random(in: 0..<4, using: &random) == 0,
      maxSubmissions: Bool.random(using: &random) ? nil : Int.random(in: 1...5, using: &random),
      minimumSpacing: Int.random(in: 0..<3, using: &random) == 0
        ? .milliseconds(Int64.random(in: 0...1_500, using: &random)) : nil)
  }

  /// Runs one sequence; returns a description of the first divergence, or nil.
  static func runSequence(seed: UInt64, operations: Int) -> String? {
    var random = SeededRandomNumberGenerator(seed: seed)
    let options = randomOptions(&random)
    let initialWork: String? = Bool.random(using: &random) ? "init" : nil
    var harness = MachineHarness(options: options, work: initialWork)
    var model = ReferenceModel(options: options, lastWork: initialWork)
    // Delays and advances are in milliseconds; maxWait is whole seconds, so scale delays up.
    for step in 0..<operations {
      let operation: String
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<55:
        let delay = Int64.random(in: -200...2_500, using: &random)
        let work: String? = Bool.random(using: &random) ? nil : "W\(step)"
        harness.delay(delay, work)
        model.delay(delay, work)
        operation = "delay(\(delay), \(work ?? "nil"))"
      case 55..<62:
        harness.cancel()
        model.endBurst(running: false, at: model.now)
        operation = "cancel()"
      case 62..<68:
        harness.flush()
        model.endBurst(running: true, at: model.now)
        operation = "flush()"
      case 68..<76:
        // Time moves, and the timers due on the way are late (T7).
        let elapsed = Int64.random(in: 0...1_500, using: &random)
        harness.hold(by: elapsed)
        model.hold(by: elapsed)
        operation = "hold(\(elapsed))"
      default:
        let elapsed = Int64.random(in: 0...1_500, using: &random)
        harness.advance(by: elapsed)
        model.advance(by: elapsed)
        operation = "advance(\(elapsed))"
      }
      let context = "seed \(seed), step \(step) \(operation), options \(options)"
      if harness.runs != model.runs {
        return "runs \(harness.runs) != model \(model.runs) after \(context)"
      }
      if harness.outcomes != model.outcomes {
        return "outcomes \(harness.outcomes) != model \(model.outcomes) after \(context)"
      }
      if harness.machine.isPending != (model.burst != nil) {
        return "isPending \(harness.machine.isPending) != model after \(context)"
      }
      if step % 8 == 7 { harness.recheckKnownOutcomes() }
      if !harness.duplicateResolutions.isEmpty {
        return "resolved twice: \(harness.duplicateResolutions) after \(context)"
      }
      if options.deadlinePolicy == .extend, harness.armedByJoin > 0 {
        return "an .extend submission armed a second timer after \(context)"
      }
    }
    return nil
  }

  @Test func machineMatchesReferenceModelOnRandomSequences() async {
    let failures = await offCooperativePool {
      var failures: [String] = []
      for seed in 0..<UInt64(TestScale.modelSequences) {
        if let failure = Self.runSequence(seed: seed &* 7_919 &+ 17, operations: 40) {
          failures.append(failure)
          if failures.count >= 3 { break }
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
  }

  /// The model test must be able to fail: a machine that ignored `.extend` would diverge.
  @Test func referenceModelDetectsAWrongDeadline() {
    var model = ReferenceModel(options: DelayOptions(), lastWork: "A")
    model.delay(500, nil)
    model.delay(100, nil)
    model.advance(by: 100)
    #expect(model.runs.isEmpty)
    model.advance(by: 400)
    #expect(model.runs == [.init(work: "A", at: 500)])
  }

  /// The model follows `maxSubmissions` too: the burst that reaches it runs at once, and the
  /// leading submission counts.
  @Test func referenceModelEndsABurstAtMaxSubmissions() {
    var model = ReferenceModel(options: DelayOptions(maxSubmissions: 3), lastWork: "A")
    for _ in 0..<3 { model.delay(500, nil) }
    #expect(model.runs == [.init(work: "A", at: 0)])
    #expect(model.burst == nil)
    var leading = ReferenceModel(
      options: DelayOptions(leading: true, maxSubmissions: 2), lastWork: "A")
    leading.delay(500, nil)
    leading.delay(500, "B")
    #expect(leading.runs == [.init(work: "A", at: 0), .init(work: "B", at: 0)])
  }
}
