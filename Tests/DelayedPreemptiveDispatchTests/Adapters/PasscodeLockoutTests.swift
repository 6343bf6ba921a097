import DelayedPreemptiveDispatchTesting
import Dispatch
import Foundation
import Testing

@testable import DelayedPreemptiveDispatch

@Suite("PasscodeLockout")
struct PasscodeLockoutTests {
  let clock = ManualClock()
  let drain = CallbackDrain()
  let changes = Recorder<PasscodeLockout.State>()

  func makeLockout(
    maxFailures: Int = 3, window: Duration = .seconds(60), lockoutDuration: Duration = .seconds(60)
  ) -> PasscodeLockout {
    PasscodeLockout(
      maxFailures: maxFailures, window: window, lockoutDuration: lockoutDuration, clock: clock,
      callbackQueue: drain.queue
    ) { [changes] in changes.append($0) }
  }

  @Test func failuresBelowMaxAreCountedAndReportedInOrder() async {
    let lockout = makeLockout()
    #expect(lockout.state == .open(failures: 0))
    #expect(lockout.recordFailure() == .open(failures: 1))
    #expect(lockout.recordFailure() == .open(failures: 2))
    await drain.drain()
    #expect(changes.all == [.open(failures: 1), .open(failures: 2)])
  }

  @Test func windowPassingWithNoFailureResetsCount() async {
    let lockout = makeLockout()
    lockout.recordFailure()
    await clock.advance(by: .seconds(60) - .milliseconds(1))
    #expect(lockout.state == .open(failures: 1))
    await clock.advance(by: .milliseconds(1))
    #expect(lockout.state == .open(failures: 0))
    #expect(changes.all == [.open(failures: 1), .open(failures: 0)])
  }

  @Test func eachFailureWithinWindowRestartsWindow() async {
    let lockout = makeLockout(maxFailures: 5)
    lockout.recordFailure()
    await clock.advance(by: .seconds(50))
    lockout.recordFailure()
    await clock.advance(by: .seconds(50))
    #expect(lockout.state == .open(failures: 2))
    await clock.advance(by: .seconds(10))
    #expect(lockout.state == .open(failures: 0))
  }

  @Test func failureAfterWindowStartsNewCount() async {
    let lockout = makeLockout()
    lockout.recordFailure()
    lockout.recordFailure()
    await clock.advance(by: .seconds(60))
    #expect(lockout.recordFailure() == .open(failures: 1))
  }

  @Test func failureReachingMaxLocksOutAndLockoutEndsOpen() async {
    let lockout = makeLockout(lockoutDuration: .seconds(30))
    lockout.recordFailure()
    lockout.recordFailure()
    #expect(lockout.recordFailure() == .lockedOut)
    #expect(lockout.recordFailure() == .lockedOut)
    #expect(lockout.remainingLockout == .seconds(30))
    await clock.advance(by: .seconds(30) - .milliseconds(1))
    #expect(lockout.state == .lockedOut)
    #expect(lockout.remainingLockout == .milliseconds(1))
    await clock.advance(by: .milliseconds(1))
    #expect(lockout.state == .open(failures: 0))
    #expect(lockout.remainingLockout == nil)
    #expect(
      changes.all == [.open(failures: 1), .open(failures: 2), .lockedOut, .open(failures: 0)])
  }

  @Test func failuresDuringLockoutCountNothingAfterIt() async {
    let lockout = makeLockout(maxFailures: 2, lockoutDuration: .seconds(10))
    lockout.recordFailure()
    lockout.recordFailure()
    for _ in 0..<5 { lockout.recordFailure() }
    await clock.advance(by: .seconds(10))
    #expect(lockout.recordFailure() == .open(failures: 1))
  }

  @Test func maxFailuresOfOneLocksOutOnFirstFailure() async {
    let lockout = makeLockout(maxFailures: 1)
    #expect(lockout.recordFailure() == .lockedOut)
    await drain.drain()
    #expect(changes.all == [.lockedOut])
  }

  @Test func successResetsCountAndCancelsWindowTimer() async {
    let lockout = makeLockout()
    lockout.recordFailure()
    lockout.recordFailure()
    lockout.recordSuccess()
    #expect(lockout.state == .open(failures: 0))
    await clock.advance(by: .seconds(120))
    await drain.drain()
    #expect(changes.all == [.open(failures: 1), .open(failures: 2), .open(failures: 0)])
  }

  @Test func successWithNothingCountedReportsNothing() async {
    let lockout = makeLockout()
    lockout.recordSuccess()
    await drain.drain()
    #expect(changes.all.isEmpty)
  }

  @Test func successDoesNotEndLockout() async {
    let lockout = makeLockout(maxFailures: 1, lockoutDuration: .seconds(60))
    lockout.recordFailure()
    lockout.recordSuccess()
    #expect(lockout.state == .lockedOut)
    await clock.advance(by: .seconds(60))
    #expect(lockout.state == .open(failures: 0))
    #expect(changes.all == [.lockedOut, .open(failures: 0)])
  }

  @Test func escalatingLockoutsGrowAndSuccessStartsAgain() async {
    let lockout = PasscodeLockout(
      maxFailures: 1, lockoutDurations: [.seconds(60), .seconds(300), .seconds(900)],
      clock: clock, callbackQueue: drain.queue)
    var observed: [Duration?] = []
    for _ in 0..<4 {
      lockout.recordFailure()
      observed.append(lockout.remainingLockout)
      await clock.advance(by: lockout.remainingLockout ?? .zero)
      #expect(lockout.state == .open(failures: 0))
    }
    #expect(observed == [.seconds(60), .seconds(300), .seconds(900), .seconds(900)])
    lockout.recordSuccess()
    lockout.recordFailure()
    #expect(lockout.remainingLockout == .seconds(60))
  }

  @Test func releasedLockoutIsFreedAndItsTimerDoesNothing() async {
    var lockout: PasscodeLockout? = makeLockout(maxFailures: 1)
    weak let weakLockout = lockout
    lockout?.recordFailure()
    lockout = nil
    #expect(weakLockout == nil)
    await clock.advance(by: .seconds(120))
    await drain.drain()
    #expect(changes.all == [.lockedOut])
  }
}
