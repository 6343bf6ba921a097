import DelayedPreemptiveDispatch

/// Wrong passcodes: two that the window forgets, then three in a row that lock out, a refused
/// one during the lockout, and the lockout's end.
enum LockoutScenario {
  static let title = "Passcode lockout"
  static let maxFailures = 3
  static let window = Duration.milliseconds(800)
  static let lockout = Duration.milliseconds(1200)
  static let rules =
    "\(maxFailures) wrong passcodes, each within \(seconds(window)) of the previous one,"
    + " lock out for \(seconds(lockout))"
  /// When each wrong passcode is entered.
  static let wrongPasscodes: [Duration] = [0, 400, 1500, 1800, 2000, 2400].map {
    .milliseconds($0)
  }

  private struct Count {
    var failures = 0
    var lockedOut = false
    /// The adapter reported `.lockedOut`, then `.open` again.
    var adapterLockedOut = false
    var adapterReopened = false
  }

  static func play(on backend: DemoOptions.Backend) async -> ScenarioRun {
    let run = ScenarioRun(
      backend: backend.make(
        label: "dpd-demo.lockout", options: DelayOptions(deadlinePolicy: .restart)))
    let count = LockBox(Count())
    let adapter = PasscodeLockout(
      maxFailures: maxFailures, window: window, lockoutDuration: lockout,
      callbackQueue: run.adapterQueue
    ) { state in
      switch state {
      case .open(let failures):
        count.withLock { if $0.adapterLockedOut { $0.adapterReopened = true } }
        run.adapter(Character("\(failures)"), "onChange(.open(failures: \(failures)))")
      case .lockedOut:
        count.withLock { $0.adapterLockedOut = true }
        run.adapter("L", "onChange(.lockedOut)")
      }
    }
    for instant in wrongPasscodes {
      await run.at(instant)
      await wrongPasscode(count, run, adapter)
    }
    await run.finish { count.withLock { $0.adapterReopened } }
    return run
  }

  /// Logs the input, then tells the adapter, then submits, so the log reads in that order.
  private static func wrongPasscode(
    _ count: LockBox<Count>, _ run: ScenarioRun, _ adapter: PasscodeLockout
  ) async {
    let (failures, locks) = count.withLock { count -> (Int, Bool) in
      guard !count.lockedOut else { return (0, false) }
      count.failures += 1
      guard count.failures == maxFailures else { return (count.failures, false) }
      count.failures = 0
      count.lockedOut = true
      return (maxFailures, true)
    }
    if failures == 0 {
      run.input("wrong passcode, refused: locked out (nothing submitted)")
      adapter.recordFailure()
    } else if locks {
      run.input("wrong passcode \(failures) of \(maxFailures): lock out")
      adapter.recordFailure()
      await run.submit("lockout", delay: lockout, firing: "lockout ends") {
        count.withLock { $0.lockedOut = false }
      }
    } else {
      run.input("wrong passcode \(failures) of \(maxFailures)")
      adapter.recordFailure()
      await run.submit("wrong #\(failures)", delay: window, firing: "window passed, count reset") {
        count.withLock { $0.failures = 0 }
      }
    }
  }
}
