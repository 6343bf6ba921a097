import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// `ManualClock` itself: ordering, awaiting scheduled work, sleeping and cancellation.
@Suite struct ManualClockTests {
  let clock = ManualClock()
  let log = Recorder<String>()

  @Test func timeMovesOnlyWhenAdvanced() async {
    #expect(clock.now == ManualClock.Instant(offset: .zero))
    await clock.advance(by: .seconds(2))
    #expect(clock.now.offset == .seconds(2))
    await clock.advance(by: .seconds(-1))
    #expect(clock.now.offset == .seconds(2))
  }

  @Test func scheduledActionsFireInDeadlineOrderTiesInArmingOrder() async {
    for (delay, name) in [(30, "c"), (10, "a1"), (20, "b"), (10, "a2"), (40, "late")] {
      clock.schedule(after: .milliseconds(delay), tolerance: nil) { [log] in log.append(name) }
    }
    await clock.advance(by: .milliseconds(30))
    #expect(log.elements == ["a1", "a2", "b", "c"])
    #expect(clock.pendingTimerCount == 1)
  }

  @Test func advanceAwaitsScheduledWorkAndNowReadsItsDeadline() async {
    clock.schedule(after: .milliseconds(10), tolerance: nil) { [clock, log] in
      await Task.yield()
      log.append("ran at \(clock.now.offset)")
    }
    await clock.advance(by: .seconds(1))
    #expect(log.elements == ["ran at 0.01 seconds"])
    #expect(clock.now.offset == .seconds(1))
  }

  @Test func workScheduledByDueWorkFiresInTheSameAdvance() async {
    clock.schedule(after: .milliseconds(10), tolerance: nil) { [clock, log] in
      log.append("first")
      clock.schedule(after: .milliseconds(10), tolerance: nil) { log.append("second") }
    }
    await clock.advance(by: .milliseconds(20))
    #expect(log.elements == ["first", "second"])
  }

  @Test func sleepResumesWhenDeadlineIsReached() async throws {
    let deadline = clock.now.advanced(by: .milliseconds(50))
    let sleeper = Task { [clock] in try await clock.sleep(until: deadline) }
    while clock.pendingTimerCount == 0 { await Task.yield() }
    await clock.advance(by: .milliseconds(49))
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .milliseconds(1))
    try await sleeper.value
    #expect(clock.pendingTimerCount == 0)
  }

  @Test func sleepThrowsOnCancellationAndLeavesNoTimer() async {
    let sleeper = Task { [clock] in try await clock.sleep(until: .init(offset: .seconds(10))) }
    sleeper.cancel()
    await #expect(throws: CancellationError.self) { try await sleeper.value }
    #expect(clock.pendingTimerCount == 0)
  }

  @Test func sleepUntilPastInstantReturnsAtOnce() async throws {
    await clock.advance(by: .seconds(1))
    try await clock.sleep(until: .init(offset: .milliseconds(500)))
  }
}
