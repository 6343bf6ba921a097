import DelayedPreemptiveDispatch

/// A burst of pans on a map: each stop schedules a settle, each new pan cancels it, and a
/// second stop preempts the first; only the last stop's settle fires.
enum PanScenario {
  static let title = "Pan settle"
  static let settleDelay = Duration.milliseconds(400)
  static let rules = "settle \(seconds(settleDelay)) after the last pan stop with no pan after it"

  enum Motion {
    case began
    case stopped(String)
  }

  static let script: [(Int, Motion)] = [
    (0, .began), (200, .stopped("finger up")), (350, .began), (500, .stopped("finger up")),
    (700, .stopped("inertia end")), (900, .began), (1100, .stopped("finger up")),
  ]

  static func play(on backend: DemoOptions.Backend) async -> ScenarioRun {
    let run = ScenarioRun(
      backend: backend.make(
        label: "dpd-demo.pan", options: DelayOptions(deadlinePolicy: .restart)))
    let settles = LockBox(0)
    let adapter = PanSettleDetector(settleDelay: settleDelay, callbackQueue: run.adapterQueue) {
      settles.withLock { $0 += 1 }
      run.adapter("S", "onSettle()")
    }
    let stopPending = LockBox(false)
    for (milliseconds, motion) in script {
      await run.at(.milliseconds(milliseconds))
      switch motion {
      case .began:
        run.input("pan began")
        adapter.panDidBegin()
        if stopPending.withLock({ $0 }) { await run.cancel("a pan began") }
      case .stopped(let why):
        run.input("pan stopped (\(why))")
        adapter.panDidStop()
        stopPending.withLock { $0 = true }
        await run.submit("stop", delay: settleDelay, firing: "map settled, load tiles") {
          stopPending.withLock { $0 = false }
        }
      }
    }
    await run.finish { settles.withLock { $0 > 0 } }
    return run
  }
}
