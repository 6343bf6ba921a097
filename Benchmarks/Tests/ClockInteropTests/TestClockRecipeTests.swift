import Clocks
import DelayedPreemptiveDispatch
import Foundation
import Testing

/// The recipe that Getting Started and the README give for a test clock that is not
/// `ManualClock`, here swift-clocks' `TestClock` and `ImmediateClock`: the queue and the actor
/// sleep on such a clock through `sleep(until:tolerance:)`, in a task of their own, and the
/// clock's `advance` resumes that sleep but returns without waiting for the task the timer then
/// starts. So a test advances a little past the deadline (a `TestClock` sleep that begins when
/// the clock already stands exactly at its deadline waits for the next `advance`), then awaits
/// the instance's `wait()`, or the submission's ticket `outcome`, and reads the result. Each
/// scenario runs many times: one that raced would fail some of them (checked right after
/// `advance`, without `wait()`, the task had not run 3 times in 6,000 when it was reported).
@Suite struct TestClockRecipeTests {
  static let repetitions = 1_000

  /// A count that the tasks increment, from whichever thread runs them.
  final class Counter: @unchecked Sendable {
    // Sound: `count` is read and written only under `lock`.
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
  }

  /// Runs `operation`, and records an issue instead of hanging if it has not returned within
  /// `limit` of real time (a sleep that missed its `advance` would never return).
  static func bounded(
    _ what: String, within limit: Duration = .seconds(10),
    _ operation: @escaping @Sendable () async -> Void
  ) async {
    let returned = await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        await operation()
        return true
      }
      group.addTask {
        try? await Task.sleep(for: limit)
        return false
      }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
    if !returned { Issue.record("\(what) did not return within \(limit)") }
  }

  @Test func actorOnTestClockRunsTheLastSearchOnceAfterAdvanceAndWait() async {
    for _ in 0..<Self.repetitions {
      let clock = TestClock()
      let searches = Counter()
      let search = DelayedPreemptiveActor(
        clock: clock, options: DelayOptions(deadlinePolicy: .restart))
      await search.delay(.milliseconds(300)) { searches.increment() }
      await clock.advance(by: .milliseconds(200))
      await search.delay(.milliseconds(300)) { searches.increment() }  // preempts the first
      await clock.advance(by: .milliseconds(299))
      #expect(searches.value == 0)  // never before the deadline, at 500 ms
      await clock.advance(by: .milliseconds(2))  // a little past it
      await Self.bounded("wait()") { await search.wait() }  // the task has run and returned
      #expect(searches.value == 1)
    }
  }

  @Test func ticketOutcomeOnTestClockSaysExecutedOnceTheTaskHasReturned() async {
    for _ in 0..<Self.repetitions {
      let clock = TestClock()
      let saves = Counter()
      let autosave = DelayedPreemptiveDispatchQueue(clock: clock) { saves.increment() }
      let first = autosave.delay(for: .milliseconds(500))
      await clock.advance(by: .milliseconds(300))
      let last = autosave.delay(for: .milliseconds(500))
      #expect(await first.outcome == .preempted)
      await clock.advance(by: .milliseconds(501))  // past the deadline, at 800 ms
      await Self.bounded("the ticket's outcome") {
        #expect(await last.outcome == .executed)  // after the task has returned
      }
      #expect(saves.value == 1)
    }
  }

  /// On `ImmediateClock` every sleep returns at once, so a burst may run before the next
  /// submission comes: a test checks what ran after `wait()`, never how many bursts there were.
  @Test func actorOnImmediateClockHasRunTheTaskOnceWaitReturns() async {
    for _ in 0..<Self.repetitions {
      let searches = Counter()
      let search = DelayedPreemptiveActor(clock: ImmediateClock())
      let ticket = await search.delay(.seconds(1)) { searches.increment() }
      await Self.bounded("wait()") { await search.wait() }
      #expect(searches.value == 1)
      #expect(await ticket.outcome == .executed)
    }
  }
}
