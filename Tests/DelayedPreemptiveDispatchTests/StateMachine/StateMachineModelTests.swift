import DelayedPreemptiveDispatchModel
import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// Random operation sequences, checked step by step against the reference model (module
/// `DelayedPreemptiveDispatchModel`), which computes each burst's deadline directly instead of
/// through timers, generations and re-arming.
///
/// Runs `TestScale.modelSequences` sequences: 10⁴ normally, 10⁶ with `DPD_LONG_TESTS=1`, 10³
/// under a sanitizer.
@Suite struct StateMachineModelTests {
  static func randomOptions(_ random: inout SeededRandomNumberGenerator) -> DelayOptions {
    KeyedModelSequence.randomOptions(&random)
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
        model.cancel()
        operation = "cancel()"
      case 62..<68:
        harness.flush()
        model.flush()
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
