import DelayedPreemptiveDispatchModel
import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// Random operation sequences over up to 8 keys, run on the shipped driver the way a keyed shell runs it
/// and checked step by step against one reference model per key (`KeyedReferenceModel` of the
/// module `DelayedPreemptiveDispatchModel`, which checks the PostgreSQL store too). Outcomes are read from the real tickets; the driver must also
/// hold state only for keys with a pending burst once their runs are done.
///
/// Runs `TestScale.modelSequences` sequences: 10⁴ normally, 10⁶ with `DPD_LONG_TESTS=1`, 10³
/// under a sanitizer.
@Suite struct KeyedModelTests {
  typealias Run = MachineHarness.Run

  /// The ``DriverHarness`` of a line per key, as the keyed shells build their driver.
  typealias KeyedHarness = DriverHarness<KeyedLines<Int, String>>

  static func harness(options: DelayOptions, maxConcurrentTasks: Int?) -> KeyedHarness {
    KeyedHarness(driver: BurstDriver(options: options, maxConcurrentTasks: maxConcurrentTasks))
  }

  static func runSequence(
    seed: UInt64, operations: Int, keyCount: Int? = nil,
    engine: KeyedModelSequence.Engine = .inProcess
  ) -> String? {
    var sequence = KeyedModelSequence(seed: seed, engine: engine, keyCount: keyCount)
    let options = sequence.options
    let keyCount = sequence.keyCount
    let limit = sequence.concurrencyLimit
    var harness = Self.harness(options: options, maxConcurrentTasks: limit)
    var model = KeyedReferenceModel(keyCount: keyCount, options: options)
    for step in 0..<operations {
      let operation = sequence.next()
      switch operation {
      case .delay(let key, let milliseconds, let value):
        harness.delay(key, milliseconds, value)
      case .batch(let submissions):
        for submission in submissions {
          harness.delay(submission.key, submission.milliseconds, submission.value)
        }
      case .cancel(let key): harness.perform(harness.driver.cancel(key))
      case .flush(let key): harness.flush(key)
      case .cancelAll: harness.perform(harness.driver.cancelAll())
      case .flushAll: harness.flushAll()
      case .hold(let milliseconds): harness.hold(by: milliseconds)
      case .advance(let milliseconds): harness.advance(by: milliseconds)
      }
      model.apply(operation)
      let models = model.keys
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

  /// The sequences that `PostgresStoreModelTests` runs on the PostgreSQL store (the same seeds,
  /// 8 keys, 200 steps, no `leading`), here with `.replace` only: one specification, checked
  /// on both engines. All 10³ of them; the first 10² under a sanitizer (see
  /// `TestScale.storeSequences`).
  @Test func keyedDriverMatchesTheModelOnTheStoresSequences() async {
    let failures = await offCooperativePool {
      var failures: [String] = []
      for index in 0..<TestScale.storeSequences {
        if let failure = Self.runSequence(
          seed: KeyedModelSequence.storeSeed(index), operations: KeyedModelSequence.storeSteps,
          keyCount: 8, engine: .init(leading: false, append: false))
        {
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
