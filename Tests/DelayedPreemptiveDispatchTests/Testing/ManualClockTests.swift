import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// `ManualClock` itself: ordering, awaiting scheduled work, sleeping and cancellation. The time
/// limit turns a sleep or an `advance` that never returns into a failure: a sleep throws when
/// the limit cancels the test.
@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
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
    try await clock.sleep(until: .init(offset: .seconds(1)))
    #expect(clock.now.offset == .seconds(1))
    #expect(clock.pendingTimerCount == 0)
  }

  @Test func dueWorkSleepingOnTheClockResumesWithinTheSameAdvance() async {
    clock.schedule(after: .milliseconds(10), tolerance: nil) { [clock, log] in
      log.append("a at \(clock.now.offset)")
      do {
        try await clock.sleep(for: .milliseconds(5))
        log.append("a woke at \(clock.now.offset)")
      } catch {
        log.append("a cancelled")
      }
    }
    clock.schedule(after: .milliseconds(12), tolerance: nil) { [clock, log] in
      log.append("b at \(clock.now.offset)")
    }
    await clock.advance(by: .milliseconds(20))
    #expect(
      log.elements == ["a at 0.01 seconds", "b at 0.012 seconds", "a woke at 0.015 seconds"])
    #expect(clock.now.offset == .milliseconds(20))
  }

  @Test func actorTaskSleepingPastTheTargetResumesInALaterAdvance() async {
    let actor = DelayedPreemptiveActor(clock: clock)
    let ticket = await actor.delay(.milliseconds(10)) { [clock, log] in
      do {
        try await clock.sleep(for: .milliseconds(50))
        log.append("woke at \(clock.now.offset)")
      } catch {
        log.append("cancelled")
      }
    }
    await clock.advance(by: .milliseconds(20))
    #expect(log.elements.isEmpty)
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .milliseconds(40))
    #expect(log.elements == ["woke at 0.06 seconds"])
    #expect(await ticket.outcome == .executed)
  }

  @Test func zeroDelayActionRunsOnTheNextAdvanceEvenByZero() async {
    clock.schedule(after: .zero, tolerance: nil) { [log] in log.append("zero") }
    clock.schedule(after: .seconds(-1), tolerance: nil) { [log] in log.append("negative") }
    #expect(clock.pendingTimerCount == 2)
    #expect(log.elements.isEmpty)
    await clock.advance(by: .zero)
    #expect(log.elements == ["zero", "negative"])
    #expect(clock.now.offset == .zero)
  }

  @Test func leadingRunIsAwaitedThroughItsTicketWhileTheBurstStaysPending() async {
    let options = DelayOptions(leading: true)
    let queue = DelayedPreemptiveDispatchQueue(clock: clock, options: options)
    let ticket = queue.delay(for: .seconds(1)) { [log] in log.append("leading") }
    #expect(await ticket.outcome == .executed)
    #expect(log.elements == ["leading"])
    // The burst stays pending until its deadline, so the queue's `wait()` would not return yet.
    #expect(queue.isPending)
    #expect(queue.wait(timeout: .now()) == .timedOut)
    await clock.advance(by: .seconds(1))
    #expect(!queue.isPending)
    #expect(queue.wait(timeout: .now()) == .success)
  }
}
