import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch

/// The probes of `ManualClock` and of the clock time line, which need a running task.
func clockProbes() -> [String: () -> Void] {
  [
    // A second `advance` while the first still awaits the work of a due timer.
    "clock-overlapping-advance": {
      let clock = ManualClock()
      let elsewhere = ManualClock()
      let entered = DispatchSemaphore(value: 0)
      clock.schedule(after: .seconds(1), tolerance: nil) {
        entered.signal()
        // Sleeping on another clock that never moves keeps this advance running.
        try? await elsewhere.sleep(until: .init(offset: .seconds(1)))
      }
      Task { await clock.advance(by: .seconds(1)) }
      entered.wait()
      runToEnd { await clock.advance(by: .seconds(1)) }
    },
    // A queue used after its clock moved past the end of its time line.
    "clock-time-line-overflow": {
      runToEnd {
        let clock = ManualClock()
        let queue = DelayedPreemptiveDispatchQueue(clock: clock)
        await clock.advance(by: .seconds(300 * 365 * 86_400))
        queue.delay(for: .milliseconds(1)) {}
        await clock.advance(by: .seconds(10))
      }
    },
  ]
}

/// Runs `body` in a task and blocks the calling thread until it returns.
func runToEnd(_ body: @escaping @Sendable () async -> Void) {
  let done = DispatchSemaphore(value: 0)
  Task {
    await body()
    done.signal()
  }
  done.wait()
}
