import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// Callbacks run with no adapter lock held: each one calls back into its own adapter, which
/// would deadlock on the non-recursive lock if the callback ran under it.
@Suite("Adapter callbacks")
struct AdapterCallbackTests {
  let clock = ManualClock()
  let drain = CallbackDrain()

  @Test func passcodeLockoutCallbackMayCallItsLockout() async {
    let holder = LockBox<PasscodeLockout?>(nil)
    let seen = Recorder<PasscodeLockout.State>()
    let lockout = PasscodeLockout(maxFailures: 2, clock: clock, callbackQueue: drain.queue) {
      _ in
      guard let lockout = holder.withLock({ $0 }) else { return }
      seen.append(lockout.state)
      lockout.recordSuccess()
    }
    holder.withLock { $0 = lockout }
    lockout.recordFailure()
    await drain.drain()
    await drain.drain()
    #expect(seen.all == [.open(failures: 1), .open(failures: 0)])
    holder.withLock { $0 = nil }
  }

  @Test func panSettleCallbackSeesSettledState() async {
    let holder = LockBox<PanSettleDetector?>(nil)
    let seen = Recorder<Bool>()
    let detector = PanSettleDetector(clock: clock, callbackQueue: drain.queue) {
      guard let detector = holder.withLock({ $0 }) else { return }
      seen.append(detector.isSettled)
      detector.panDidStop()
    }
    holder.withLock { $0 = detector }
    detector.panDidStop()
    await clock.advance(by: .milliseconds(250))
    await clock.advance(by: .milliseconds(250))
    #expect(seen.all == [true, true])
    holder.withLock { $0 = nil }
  }

  @Test func allLoadedCallbackMayLoadAgain() async {
    let holder = LockBox<AllResourcesLoadedSignal?>(nil)
    let counts = Recorder<Int>()
    let signal = AllResourcesLoadedSignal(clock: clock, callbackQueue: drain.queue) { count in
      counts.append(count)
      guard count == 2, let signal = holder.withLock({ $0 }) else { return }
      #expect(signal.loadedCount == 0)
      signal.resourceDidLoad()
    }
    holder.withLock { $0 = signal }
    signal.resourceDidLoad()
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(500))
    await clock.advance(by: .milliseconds(500))
    #expect(counts.all == [2, 1])
    holder.withLock { $0 = nil }
  }
}
