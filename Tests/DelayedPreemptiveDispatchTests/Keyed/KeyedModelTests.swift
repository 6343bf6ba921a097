import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// Random operation sequences over up to 8 keys, run on the shipped driver the way a keyed shell runs it
/// and checked step by step against one reference model per key (the single-key model of
/// `StateMachineModelTests`). Outcomes are read from the real tickets; the driver must also
/// hold state only for keys with a pending burst once their runs are done.
///
/// Runs `TestScale.modelSequences` sequences: 10⁴ normally, 10⁶ with `DPD_LONG_TESTS=1`.
@Suite struct KeyedModelTests {
  typealias Model = StateMachineModelTests.ReferenceModel
  typealias Run = MachineHarness.Run

  /// The ``DriverHarness`` of a line per key, as the keyed shells build their driver.
  typealias KeyedHarness = DriverHarness<KeyedLines<Int, String>>

  static func harness(options: DelayOptions, maxConcurrentTasks: Int?) -> KeyedHarness {
    KeyedHarness(driver: BurstDriver(options: options, maxConcurrentTasks: maxConcurrentTasks))
  }

  static func runSequence(seed: UInt64, operations: Int) -> String? {
    var random = SeededRandomNumberGenerator(seed: seed)
    let options = StateMachineModelTests.randomOptions(&random)
    let keyCount = Int.random(in: 1...8, using: &random)
    let limit: Int? = Bool.random(using: &random) ? Int.random(in: 1...3, using: &random) : nil
    var harness = Self.harness(options: options, maxConcurrentTasks: limit)
    var models = (0..<keyCount).map { _ in Model(options: options, lastWork: nil) }
    for step in 0..<operations {
      let key = Int.random(in: 0..<keyCount, using: &random)
      let operation: String
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<55:
        let delay = Int64.random(in: -200...2_500, using: &random)
        harness.delay(key, delay, "v\(step)")
        models[key].delay(delay, "v\(step)")
        operation = "delay(\(key), \(delay))"
      case 55..<61:
        harness.perform(harness.driver.cancel(key))
        models[key].endBurst(running: false, at: models[key].now)
        operation = "cancel(\(key))"
      case 61..<67:
        harness.flush(key)
        models[key].endBurst(running: true, at: models[key].now)
        operation = "flush(\(key))"
      case 67..<69:
        harness.perform(harness.driver.cancelAll())
        for index in models.indices {
          models[index].endBurst(running: false, at: models[index].now)
        }
        operation = "cancelAll()"
      case 69..<71:
        harness.flushAll()
        for index in models.indices { models[index].endBurst(running: true, at: models[index].now) }
        operation = "flushAll()"
      case 71..<78:
        // Time moves, and the timers due on the way are late (T7).
        let elapsed = Int64.random(in: 0...1_500, using: &random)
        harness.hold(by: elapsed)
        for index in models.indices { models[index].hold(by: elapsed) }
        operation = "hold(\(elapsed))"
      default:
        let elapsed = Int64.random(in: 0...1_500, using: &random)
        harness.advance(by: elapsed)
        for index in models.indices { models[index].advance(by: elapsed) }
        operation = "advance(\(elapsed))"
      }
      let context =
        "seed \(seed), step \(step) \(operation), options \(options), limit \(String(describing: limit))"
      // Outcomes are final once known, so a wrong one is still there at the next check.
      let checksOutcomes = step % 4 == 3 || step == operations - 1
      for index in models.indices {
        if (harness.runs[index] ?? []) != models[index].runs {
          return
            "key \(index) runs \(harness.runs[index] ?? []) != \(models[index].runs) after \(context)"
        }
        if checksOutcomes, harness.outcomes(of: index) != models[index].outcomes {
          return
            "key \(index) outcomes \(harness.outcomes(of: index)) != \(models[index].outcomes) after \(context)"
        }
        if harness.driver.isPending(index) != (models[index].burst != nil) {
          return "key \(index) isPending differs after \(context)"
        }
      }
      let pending = models.filter { $0.burst != nil }.count
      // A line is held while its key is pending, and, with `minimumSpacing`, until the spacing
      // of its last run has passed (its timer then drops it).
      let held = harness.driver.footprint.lines
      let spaced = options.minimumSpacing.map { $0 > .zero } ?? false
      if harness.driver.pendingCount != pending || held < pending
        || (!spaced && held != pending) || held > keyCount
      {
        return
          "pendingCount \(harness.driver.pendingCount), keys held \(harness.driver.footprint.lines), model \(pending) after \(context)"
      }
    }
    return nil
  }

  @Test func keyedDriverMatchesPerKeyReferenceModelsOnRandomSequences() async {
    let failures = await offCooperativePool {
      var failures: [String] = []
      for seed in 0..<UInt64(TestScale.modelSequences) {
        if let failure = Self.runSequence(seed: seed &* 6_007 &+ 3, operations: 40) {
          failures.append(failure)
          if failures.count >= 3 { break }
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
  }

  @Test func extendResubmissionOfPendingKeyArmsNoTimer() {
    var harness = Self.harness(options: DelayOptions(), maxConcurrentTasks: nil)
    for key in 0..<100 { harness.delay(key, 1_000, "a") }
    let armed = harness.timersArmed
    for round in 0..<10 {
      for key in 0..<100 { harness.delay(key, 1_000 + Int64(round), "b") }
    }
    #expect(harness.timersArmed == armed)
    #expect(armed == 1)
    harness.advance(by: 2_000)
    #expect(harness.runs.values.map(\.count).reduce(0, +) == 100)
    #expect(harness.driver.footprint.lines == 0)
    #expect(harness.driver.footprint.timers == 0)
  }
}
