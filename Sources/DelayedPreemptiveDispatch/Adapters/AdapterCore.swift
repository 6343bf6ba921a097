import Dispatch

/// The working part of every adapter: its rules and its one timer (``AdapterTimer``, a line of
/// the ``BurstDriver``) under one lock, its timing and its callback queue.
///
/// Every event and every firing of the timer is one critical section: the rules change, the
/// timer's line follows (`.restart`, `maxWait`), and a round that ended applies the rules'
/// `timerDue()` there too. So a firing and the events around it are decided together, and
/// nothing that one transition decides waits for another to perform it. The callbacks are
/// enqueued on the callback queue before the lock is released: enqueueing runs none of them,
/// and so they are enqueued in the order of the changes. They run on that queue, never under
/// the lock. The clock is read, and the timer armed, outside the lock, as in every shell; the
/// one interpreter (``BurstEffects/perform(startWorkers:arm:install:becameIdle:)``) does that.
///
/// The timer's deliveries hold the core weakly, so a pending timer keeps no adapter alive, and
/// releasing the adapter cancels it.
final class AdapterCore<Rules: AdapterRules>: Sendable {
  let state: LockBox<Rules>
  let timing: AdapterTiming
  private let timerQueue: DispatchQueue
  private let callbacks: DispatchQueue

  /// A core for `rules`. In real time the timer delivers on a serial queue of the core's own;
  /// callbacks run on `callbackQueue`, or on another serial queue of the core's own.
  init(label: String, rules: Rules, timing: AdapterTiming, callbackQueue: DispatchQueue?) {
    state = LockBox(rules)
    self.timing = timing
    timerQueue = makeSerialQueue(label: "\(label).timer", qos: .unspecified, target: nil)
    callbacks =
      callbackQueue ?? makeSerialQueue(label: "\(label).callbacks", qos: .unspecified, target: nil)
  }

  deinit {
    state.withLock { $0.timer.release() }.performRelease()
  }

  /// The adapter's one timer; the race tests read its time.
  var timer: any BurstTimer { timing.timer }

  /// Reads the clock, applies `transition` to the rules under the lock with the reading, and
  /// ends the round there if it is due; then arms the timer and runs what must not run under
  /// the lock.
  func update<Result>(_ transition: (inout Rules, Duration) -> Result) -> Result {
    let reading = timing.now()
    let (result, afterLock) = state.withLock { rules in
      let result = transition(&rules, reading)
      return (result, settle(&rules, tracking: nil))
    }
    perform(afterLock)
    return result
  }

  /// Under the lock, after a transition: applies the rules' `timerDue()` for the round that
  /// ended, enqueues the callbacks (wrapped in `fired`'s tracking when a firing decided them),
  /// and returns what remains for after the lock.
  private func settle(
    _ rules: inout Rules, tracking fired: FiredCallbacks?
  ) -> (effects: BurstEffects, work: [@Sendable () -> Void]) {
    while rules.timer.takeDue() { rules.timerDue() }
    for callback in rules.timer.takeCallbacks() {
      let tracked: @Sendable () -> Void = fired?.track(callback) ?? callback
      callbacks.async(execute: tracked)
    }
    return rules.timer.takeAfterLock()
  }

  private func perform(_ afterLock: (effects: BurstEffects, work: [@Sendable () -> Void])) {
    afterLock.effects.perform(
      startWorkers: { _ in }, arm: { arm($0) },
      install: { handle, generation in
        state.withLock { $0.timer.install(handle, generation: generation) }
      }, becameIdle: {})
    for work in afterLock.work { work() }
  }

  /// The timer named `generation` fired: one critical section, like an event's. Returns the
  /// callbacks it enqueued, when the clock awaits them.
  private func timerFired(generation: UInt64) -> FiredCallbacks? {
    let reading = timing.now()
    let fired = timing.awaitsCallbacks ? FiredCallbacks() : nil
    let afterLock = state.withLock { rules in
      rules.timer.fired(generation: generation, at: reading)
      return settle(&rules, tracking: fired)
    }
    perform(afterLock)
    return fired
  }

  /// Arms the timer for `request`, delivering on the timer queue, or, on a clock that awaits
  /// its deliveries, in a task that then awaits the callbacks the firing enqueued.
  private func arm(_ request: TimerRequest) -> TimerHandle {
    let generation = request.generation
    let delivery: TimerDelivery =
      timing.awaitsCallbacks
      ? .task { [weak self] in
        guard let fired = self?.timerFired(generation: generation) else { return }
        await fired.wait()
      }
      : .queue(timerQueue) { [weak self] in _ = self?.timerFired(generation: generation) }
    return timing.timer.arm(at: request.deadline, tolerance: nil, delivery: delivery)
  }
}
