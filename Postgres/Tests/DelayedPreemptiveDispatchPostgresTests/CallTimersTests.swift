import NIOCore
import NIOPosix
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The one timer that bounds a queue's database calls (`CallTimers`). Needs no server; real
/// time, with margins for a loaded machine: a deadline never runs before its time, runs soon
/// after it, and calls that end in time never arm a timer of their own.
@Suite struct PostgresCallTimersTests {
  /// The calls of a busy queue (each adding its deadline, all with one timeout, and removing
  /// it when it ends) schedule one event-loop timer in all, not one per call.
  @Test func callsWithOneTimeoutScheduleOneTimer() {
    let timers = CallTimers()
    let start = NIODeadline.now()
    for index in 0..<1000 {
      let token = timers.add(at: start + .seconds(60) + .nanoseconds(Int64(index))) {
        Issue.record("a removed deadline ran")
      }
      timers.remove(token)
    }
    #expect(timers.timersScheduled == 1)
    #expect(timers.pending == 0)
  }

  /// A deadline runs at its time, never before; an earlier one added after a later one runs at
  /// its own time, not at the later one's; a removed one never runs.
  @Test func deadlinesRunAtTheirTimeAndRemovedOnesNever() async throws {
    let timers = CallTimers()
    let ran = Locked<[String: NIODeadline]>([:])
    let start = NIODeadline.now()
    func record(_ name: String) -> @Sendable () -> Void {
      { ran.withLock { $0[name] = NIODeadline.now() } }
    }
    _ = timers.add(at: start + .milliseconds(600), record("late"))
    let removed = timers.add(at: start + .milliseconds(300), record("removed"))
    _ = timers.add(at: start + .milliseconds(200), record("early"))
    timers.remove(removed)
    #expect(timers.timersScheduled == 3)  // the first, then each earlier one
    let finished = try await eventually(within: .seconds(30)) { ran.withLock { $0.count } == 2 }
    #expect(finished)
    let times = ran.withLock { $0 }
    #expect(times["removed"] == nil)
    let early = try #require(times["early"])
    let late = try #require(times["late"])
    #expect(early >= start + .milliseconds(200))
    #expect(late >= start + .milliseconds(600))
    // The early one did not wait for the late one's time (a loaded machine gets 300 ms).
    #expect(early < start + .milliseconds(500), "\(early - start)")
    #expect(timers.pending == 0)
    #expect(!timers.isScheduled)
  }

  /// A pending deadline does not keep the timers (their queue) alive, and dies with them.
  @Test func aPendingTimerDoesNotKeepItsOwnerAlive() async throws {
    let ran = Locked(false)
    weak var released: CallTimers?
    do {
      let timers = CallTimers()
      released = timers
      _ = timers.add(at: .now() + .milliseconds(100)) { ran.withLock { $0 = true } }
    }
    #expect(released == nil)
    try await Task.sleep(for: .milliseconds(400))
    #expect(!ran.withLock { $0 })
  }

  private func eventually(
    within limit: Duration, _ condition: @Sendable () -> Bool
  ) async throws -> Bool {
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
      if condition() { return true }
      try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
  }
}
