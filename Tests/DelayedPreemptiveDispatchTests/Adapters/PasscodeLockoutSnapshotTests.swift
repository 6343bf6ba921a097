import DelayedPreemptiveDispatchTesting
import Foundation
import Testing

@testable import DelayedPreemptiveDispatch

@Suite("PasscodeLockout snapshots")
struct PasscodeLockoutSnapshotTests {
  let wallStart = Date(timeIntervalSinceReferenceDate: 800_000_000)

  func relaunch(_ snapshot: PasscodeLockout.Snapshot) throws -> PasscodeLockout.Snapshot {
    try JSONDecoder().decode(
      PasscodeLockout.Snapshot.self, from: JSONEncoder().encode(snapshot))
  }

  @Test func snapshotCarriesWallClockDeadlines() async {
    let clock = ManualClock()
    let lockout = PasscodeLockout(maxFailures: 2, clock: clock)
    lockout.recordFailure()
    await clock.advance(by: .seconds(10))
    let open = lockout.snapshot(now: wallStart)
    #expect(open.failures == 1)
    #expect(open.countResetsAt == wallStart.addingTimeInterval(50))
    #expect(open.lockedOutUntil == nil)
    lockout.recordFailure()
    let locked = lockout.snapshot(now: wallStart)
    #expect(locked.failures == 0)
    #expect(locked.lockedOutUntil == wallStart.addingTimeInterval(60))
    #expect(locked.lockouts == 1)
  }

  @Test func restoredLockoutGoesOnForTheTimeLeft() async throws {
    let before = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    before.recordFailure()
    let saved = try relaunch(before.snapshot(now: wallStart))

    let clock = ManualClock()
    let drain = CallbackDrain()
    let changes = Recorder<PasscodeLockout.State>()
    let after = PasscodeLockout(maxFailures: 1, clock: clock, callbackQueue: drain.queue) {
      changes.append($0)
    }
    after.restore(saved, now: wallStart.addingTimeInterval(45))
    #expect(after.state == .lockedOut)
    #expect(after.remainingLockout == .seconds(15))
    await clock.advance(by: .seconds(15))
    #expect(after.state == .open(failures: 0))
    await drain.drain()
    #expect(changes.all == [.lockedOut, .open(failures: 0)])
  }

  @Test func restoredExpiredLockoutOpens() throws {
    let before = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    before.recordFailure()
    let saved = try relaunch(before.snapshot(now: wallStart))
    let after = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    after.restore(saved, now: wallStart.addingTimeInterval(61))
    #expect(after.state == .open(failures: 0))
  }

  @Test func restoredFailuresStayCountedForRestOfWindow() async throws {
    let before = PasscodeLockout(maxFailures: 3, clock: ManualClock())
    before.recordFailure()
    before.recordFailure()
    let saved = try relaunch(before.snapshot(now: wallStart))

    let clock = ManualClock()
    let after = PasscodeLockout(maxFailures: 3, clock: clock)
    after.restore(saved, now: wallStart.addingTimeInterval(20))
    #expect(after.state == .open(failures: 2))
    await clock.advance(by: .seconds(40))
    #expect(after.state == .open(failures: 0))
    after.restore(saved, now: wallStart.addingTimeInterval(20))
    #expect(after.recordFailure() == .lockedOut)
  }

  @Test func wallClockSetBackCannotLengthenLockout() {
    let saved = PasscodeLockout.Snapshot(
      failures: 0, countResetsAt: nil, lockedOutUntil: wallStart.addingTimeInterval(10_000),
      lockouts: 1)
    let after = PasscodeLockout(maxFailures: 1, lockoutDuration: .seconds(60), clock: ManualClock())
    after.restore(saved, now: wallStart)
    #expect(after.remainingLockout == .seconds(60))
  }

  @Test func restoredEscalationStepPicksNextLockout() async {
    let saved = PasscodeLockout.Snapshot(
      failures: 0, countResetsAt: nil, lockedOutUntil: nil, lockouts: 2)
    let clock = ManualClock()
    let after = PasscodeLockout(
      maxFailures: 1, lockoutDurations: [.seconds(1), .seconds(5), .seconds(15)], clock: clock)
    after.restore(saved, now: wallStart)
    after.recordFailure()
    #expect(after.remainingLockout == .seconds(15))
  }
}
