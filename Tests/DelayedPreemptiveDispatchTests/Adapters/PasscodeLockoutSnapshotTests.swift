import DelayedPreemptiveDispatchTesting
import Foundation
import Testing

@testable import DelayedPreemptiveDispatch

@Suite("PasscodeLockout snapshots")
struct PasscodeLockoutSnapshotTests {
  let wallStart = Date(timeIntervalSinceReferenceDate: 800_000_000)

  /// A monotonic reading in boot session `session`, `seconds` after boot.
  func reference(_ seconds: Int64, session: String = "boot-1") -> PasscodeLockout.MonotonicReference
  {
    PasscodeLockout.MonotonicReference(bootSessionID: session, uptime: .seconds(seconds))
  }

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
    let saved = try relaunch(before.snapshot(now: wallStart, reference: reference(100)))

    let clock = ManualClock()
    let changes = Recorder<PasscodeLockout.State>()
    let after = PasscodeLockout(maxFailures: 1, clock: clock) {
      changes.append($0)
    }
    after.restore(saved, now: wallStart.addingTimeInterval(45), reference: reference(145))
    #expect(after.state == .lockedOut)
    #expect(after.remainingLockout == .seconds(15))
    await clock.advance(by: .seconds(15))
    #expect(after.state == .open(failures: 0))
    #expect(changes.all == [.lockedOut, .open(failures: 0)])
  }

  @Test func restoredExpiredLockoutOpens() throws {
    let before = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    before.recordFailure()
    let saved = try relaunch(before.snapshot(now: wallStart, reference: reference(100)))
    let after = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    after.restore(saved, now: wallStart.addingTimeInterval(61), reference: reference(161))
    #expect(after.state == .open(failures: 0))
  }

  @Test func restoredFailuresStayCountedForRestOfWindow() async throws {
    let before = PasscodeLockout(maxFailures: 3, clock: ManualClock())
    before.recordFailure()
    before.recordFailure()
    let saved = try relaunch(before.snapshot(now: wallStart, reference: reference(100)))

    let clock = ManualClock()
    let after = PasscodeLockout(maxFailures: 3, clock: clock)
    after.restore(saved, now: wallStart.addingTimeInterval(20), reference: reference(120))
    #expect(after.state == .open(failures: 2))
    await clock.advance(by: .seconds(40))
    #expect(after.state == .open(failures: 0))
    after.restore(saved, now: wallStart.addingTimeInterval(20), reference: reference(120))
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

  @Test func wallClockSetForwardDoesNotShortenLockoutInSameBootSession() async throws {
    let clock = ManualClock()
    let before = PasscodeLockout(
      maxFailures: 1, lockoutDuration: .seconds(300), clock: clock)
    before.recordFailure()
    await clock.advance(by: .seconds(20))
    let saved = try relaunch(before.snapshot(now: wallStart, reference: reference(1_000)))
    #expect(saved.lockedOutFor == .seconds(280))

    // Ten seconds of uptime later, with the wall clock set one hour forward.
    let after = PasscodeLockout(
      maxFailures: 1, lockoutDuration: .seconds(300), clock: ManualClock())
    after.restore(saved, now: wallStart.addingTimeInterval(3_600), reference: reference(1_010))
    #expect(after.state == .lockedOut)
    #expect(after.remainingLockout == .seconds(270))
  }

  @Test func wallClockSetForwardDoesNotEndFailureWindowInSameBootSession() throws {
    let before = PasscodeLockout(maxFailures: 3, clock: ManualClock())
    before.recordFailure()
    before.recordFailure()
    let saved = try relaunch(before.snapshot(now: wallStart, reference: reference(1_000)))
    let after = PasscodeLockout(maxFailures: 3, clock: ManualClock())
    after.restore(saved, now: wallStart.addingTimeInterval(3_600), reference: reference(1_010))
    #expect(after.state == .open(failures: 2))
    #expect(after.recordFailure() == .lockedOut)
  }

  @Test func rebootNeverRestoresLessThanTimeLeftAtSnapshot() async throws {
    let clock = ManualClock()
    let before = PasscodeLockout(
      maxFailures: 1, lockoutDuration: .seconds(300), clock: clock)
    before.recordFailure()
    await clock.advance(by: .seconds(100))
    let saved = try relaunch(before.snapshot(now: wallStart, reference: reference(50_000)))

    // After a reboot (a new session, a smaller uptime) and a wall clock one day ahead.
    let after = PasscodeLockout(
      maxFailures: 1, lockoutDuration: .seconds(300), clock: ManualClock())
    after.restore(
      saved, now: wallStart.addingTimeInterval(86_400),
      reference: reference(30, session: "boot-2"))
    #expect(after.state == .lockedOut)
    #expect(after.remainingLockout == .seconds(200))
    // With no reading at all on restore, the same rule holds.
    let unknown = PasscodeLockout(
      maxFailures: 1, lockoutDuration: .seconds(300), clock: ManualClock())
    unknown.restore(saved, now: wallStart.addingTimeInterval(86_400), reference: nil)
    #expect(unknown.remainingLockout == .seconds(200))
  }

  @Test func snapshotSavedBeforeMonotonicReferenceStillDecodesAndUsesWallClock() throws {
    let json = #"{"failures":0,"lockedOutUntil":800000060,"lockouts":1}"#
    let saved = try JSONDecoder().decode(PasscodeLockout.Snapshot.self, from: Data(json.utf8))
    #expect(saved.reference == nil)
    let after = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    after.restore(saved, now: wallStart.addingTimeInterval(45))
    #expect(after.remainingLockout == .seconds(15))
  }

  @Test func systemMonotonicReferenceIsReadAndRecorded() throws {
    let first = try #require(PasscodeLockout.MonotonicReference.current)
    let second = try #require(PasscodeLockout.MonotonicReference.current)
    #expect(!first.bootSessionID.isEmpty)
    #expect(second.bootSessionID == first.bootSessionID)
    #expect(second.uptime >= first.uptime)
    #expect(first.uptime > .zero)
    let lockout = PasscodeLockout(maxFailures: 1, clock: ManualClock())
    lockout.recordFailure()
    let snapshot = lockout.snapshot()
    #expect(snapshot.reference?.bootSessionID == first.bootSessionID)
    #expect(snapshot.lockedOutFor == .seconds(60))
  }
}
