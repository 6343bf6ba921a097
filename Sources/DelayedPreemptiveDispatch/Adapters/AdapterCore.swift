import Dispatch

/// The working part of every adapter: its rules under a lock, the one
/// ``DelayedPreemptiveDispatchQueue`` that is its timer, its clock and its callback queue.
///
/// Each transition is decided under the lock and its ``TimerPlan`` performed after it: the
/// timer's submissions and the callbacks follow the order of the state changes, and neither the
/// queue nor user code is called under the lock. The timer's tasks hold the core weakly, so a
/// pending timer keeps no adapter alive, and releasing the adapter cancels it.
final class AdapterCore<Rules: AdapterRules>: Sendable {
  let state: LockBox<Rules>
  let timing: AdapterTiming
  let timer: DelayedPreemptiveDispatchQueue
  private let callbacks: DispatchQueue

  /// A core for `rules`, whose queue gets the plan's `maxWait` and a deadline that each
  /// submission sets (`.restart`). Callbacks run on `callbackQueue`, or on a serial queue of
  /// the core's own.
  init(label: String, rules: Rules, timing: AdapterTiming, callbackQueue: DispatchQueue?) {
    state = LockBox(rules)
    self.timing = timing
    timer = timing.makeQueue(
      "\(label).timer", DelayOptions(deadlinePolicy: .restart, maxWait: rules.plan.maxWait))
    callbacks =
      callbackQueue ?? makeSerialQueue(label: "\(label).callbacks", qos: .unspecified, target: nil)
  }

  /// Reads the clock, applies `transition` to the rules under the lock with the reading, then
  /// performs what it planned.
  func update<Result>(_ transition: (inout Rules, Duration) -> Result) -> Result {
    let reading = timing.now()
    let (result, actions) = state.withLock { rules in
      (transition(&rules, reading), rules.plan.claim())
    }
    perform(actions)
    return result
  }

  /// Performs `claimed`, then what other threads decided meanwhile, until nothing is left; so
  /// once every concurrent call has returned, all they decided has been performed. A firing
  /// performs only its own actions and leaves the rest to another thread (which the clock
  /// awaits, as `fired` tracks it), so that events from other threads never hold up the timer's
  /// queue.
  private func perform(
    _ claimed: [TimerPlan.Action]?, isFiring: Bool = false, tracking fired: FiredCallbacks? = nil
  ) {
    var claimed = claimed
    while let actions = claimed {
      for action in actions {
        switch action {
        case .delay(let delay, let sequence):
          timer.delay(for: delay) { [weak self] in self?.timerFired(sequence) }
        case .cancel:
          timer.cancel()
        case .send(let callback):
          callbacks.async(execute: callback)
        case .run(let work):
          work()
        }
      }
      claimed = state.withLock { $0.plan.next() }
      if isFiring, let rest = claimed {
        let work: @Sendable () -> Void = { self.perform(rest) }
        let tracked = fired.map { $0.track(work) } ?? work
        DispatchQueue.global().async { tracked() }
        return
      }
    }
  }

  /// The task of submission `sequence` runs, on the timer queue.
  private func timerFired(_ sequence: UInt64) {
    let reading = timing.now()
    timing.firing { fired in
      let actions = state.withLock { rules in
        rules.plan.tracking = fired
        if rules.plan.fired(sequence, at: reading) { rules.timerDue() }
        rules.plan.tracking = nil
        return rules.plan.claim()
      }
      perform(actions, isFiring: true, tracking: fired)
    }
  }
}
