import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting

/// Resources arrive at random intervals shorter than the quiet period; the signal fires once,
/// a quiet period after the last one.
enum ResourcesScenario {
  static let title = "All resources loaded"
  static let quietPeriod = Duration.milliseconds(500)
  static let maxWait = Duration.seconds(3)
  static let resources = 8
  static let rules =
    "all loaded once no resource arrived for \(seconds(quietPeriod))"
    + " (at most \(seconds(maxWait)) after the first)"

  static func play(on backend: DemoOptions.Backend, seed: UInt64) async -> ScenarioRun {
    let run = ScenarioRun(
      backend: backend.make(
        label: "dpd-demo.resources",
        options: DelayOptions(deadlinePolicy: .restart, maxWait: maxWait)))
    let signalled = LockBox(false)
    let adapter = AllResourcesLoadedSignal(
      quietPeriod: quietPeriod, maxWait: maxWait, callbackQueue: run.adapterQueue
    ) { count in
      signalled.withLock { $0 = true }
      run.adapter("A", "onAllLoaded(\(count))")
    }
    let waiter = Task { [weak adapter] in
      guard let count = await adapter?.allLoaded() else { return }
      run.input("await allLoaded() returned \(count)")
    }
    let loaded = LockBox(0)
    var random = SeededRandomNumberGenerator(seed: seed)
    var arrival = Duration.zero
    for index in 1...resources {
      await run.at(arrival)
      let count = loaded.withLock { count in
        count += 1
        return count
      }
      run.input("resource \(index) arrived")
      adapter.resourceDidLoad()
      await run.submit("load \(index)", delay: quietPeriod, firing: "all \(count) loaded") {}
      arrival += .milliseconds(Int.random(in: 50...350, using: &random))
    }
    await run.finish { signalled.withLock { $0 } }
    await waiter.value
    return run
  }
}
