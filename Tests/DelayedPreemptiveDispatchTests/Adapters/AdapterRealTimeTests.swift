import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// The only adapter tests on real time: one smoke test per adapter on the real-time path
/// (`asyncAfter`). They follow the rule of `RealTime`: "not before" strictly, and the callback
/// or signal comes eventually, with no bound on how late, so that a loaded 2-core machine
/// passes them. They never sleep: each awaits its callback or signal, and the suite's time
/// limit catches one that never comes.
@Suite("Adapters RealTime smoke", .serialized, .tags(.realTime), .realTimeLimit)
struct AdapterRealTimeTests {
  @Test func passcodeLockoutEndsNotBeforeLockoutDuration() async {
    let clock = ContinuousClock()
    let changes = Recorder<(PasscodeLockout.State, ContinuousClock.Instant)>()
    let lockout = PasscodeLockout(maxFailures: 2, lockoutDuration: .milliseconds(200)) {
      changes.append(($0, clock.now))
    }
    lockout.recordFailure()
    let lockedAt = clock.now
    #expect(lockout.recordFailure() == .lockedOut)
    await changes.waitUntilCount(3)
    let reported = changes.all
    #expect(reported.map(\.0) == [.open(failures: 1), .lockedOut, .open(failures: 0)])
    #expect(reported[2].1 >= lockedAt + .milliseconds(200))
    #expect(lockout.state == .open(failures: 0))
  }

  @Test func panSettleDetectorSettlesNotBeforeSettleDelay() async {
    let clock = ContinuousClock()
    let settles = Recorder<ContinuousClock.Instant>()
    let detector = PanSettleDetector(settleDelay: .milliseconds(150)) { settles.append(clock.now) }
    detector.panDidBegin()
    detector.panDidStop()
    // Read before the last event, not after: the detector reads its clock inside the call, and
    // a thread preempted between that reading and a reading after the call would make a
    // settle on time look early (a loaded CI run saw 9 ms of it, under ThreadSanitizer).
    let lastStop = clock.now
    detector.panDidStop()
    await settles.waitUntilCount(1)
    #expect(settles.all.count == 1)
    #expect(settles.all[0] >= lastStop + .milliseconds(150))
    #expect(detector.isSettled)
  }

  @Test func allResourcesLoadedSignalsNotBeforeQuietPeriod() async {
    let clock = ContinuousClock()
    let signal = AllResourcesLoadedSignal(quietPeriod: .milliseconds(150))
    signal.resourceDidLoad()
    // Read before the last load, as `lastStop` above: a CI run under ThreadSanitizer saw a
    // signal on time 141 ms after a reading taken once the call had returned.
    let lastLoad = clock.now
    signal.resourceDidLoad()
    let count = await signal.allLoaded()
    let signalled = clock.now
    #expect(count == 2)
    #expect(signalled >= lastLoad + .milliseconds(150))
  }
}
