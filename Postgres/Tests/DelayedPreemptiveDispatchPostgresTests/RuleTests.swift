import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rules P1 to P3 and P5 one by one, with one in-process worker and short real delays: "not
/// before the deadline" is asserted strictly, "not after" loosely (the machine is shared).
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresRuleTests {
  /// Generous: a loaded 2-core machine running three builds.
  static let late: TimeInterval = 2.0

  @Test func extendKeepsTheLaterDeadlineAndTheLastValue() async throws {
    try await TestDatabase.withQueue("extend") { queue, _ in
      let log = RunLog()
      try await queue.withWorker(handler: { key, value in try await log.record(key, value) }) {
        let start = Date()
        // A second apart, so that the second call comes within the first deadline even when a
        // call takes a few hundred milliseconds on a loaded machine.
        try await queue.delay("k", for: .seconds(1), value: "first")
        try await queue.delay("k", for: .milliseconds(50), value: "second")
        #expect(try await TestDatabase.eventually { await log.count("k") == 1 })
        try await Task.sleep(for: .milliseconds(300))
        let run = try #require(await log.all.first)
        #expect(run.started.timeIntervalSince(start) >= 1)
        #expect(run.started.timeIntervalSince(start) < 1 + Self.late)
        #expect(await log.values("k") == ["second"])
        #expect(try await queue.pendingCount() == 0)
      }
    }
  }

  @Test func restartSetsTheDeadlineFromTheLastSubmission() async throws {
    try await TestDatabase.withQueue("restart", options: DelayOptions(deadlinePolicy: .restart)) {
      queue, _ in
      let log = RunLog()
      try await queue.withWorker(handler: { key, value in try await log.record(key, value) }) {
        try await queue.delay("k", for: .seconds(5), value: "far")
        let second = Date()
        try await queue.delay("k", for: .milliseconds(100), value: "near")
        #expect(try await TestDatabase.eventually { await log.count("k") == 1 })
        let run = try #require(await log.all.first)
        #expect(run.started.timeIntervalSince(second) >= 0.1)
        #expect(run.started.timeIntervalSince(second) < 0.1 + Self.late)
        #expect(run.value == "near")
      }
    }
  }

  @Test func maxWaitBoundsABurstThatKeepsBeingExtended() async throws {
    try await TestDatabase.withQueue("maxwait", options: DelayOptions(maxWait: .milliseconds(300)))
    { queue, _ in
      let log = RunLog()
      try await queue.withWorker(handler: { key, value in try await log.record(key, value) }) {
        // Each submission asks for 1 s, so each one would move the deadline 1 s past itself:
        // without maxWait, submissions every 40 ms for 3 s would not let it run before 4 s. A
        // delay longer than maxWait also keeps the lower bound true on a loaded machine, where
        // a call can take 200 ms: with 200 ms delays, such a gap let the burst run at its own
        // deadline, before maxWait (CI saw a run 0.276 s after the first call).
        let start = Date()
        var sent = 0
        while Date().timeIntervalSince(start) < 3 {
          if await log.count("k") > 0 { break }
          sent += 1
          try await queue.delay("k", for: .seconds(1), value: "v\(sent)")
          try await Task.sleep(for: .milliseconds(40))
        }
        #expect(try await TestDatabase.eventually { await log.count("k") >= 1 })
        let run = try #require(await log.all.first)
        #expect(run.started.timeIntervalSince(start) >= 0.3)
        #expect(run.started.timeIntervalSince(start) < 0.3 + Self.late)
      }
    }
  }

  @Test func manySubmissionsOfOneBurstRunOnceWithTheLastValue() async throws {
    try await TestDatabase.withQueue("once") { queue, _ in
      let log = RunLog()
      // The deadline leaves the 20 calls time to join one burst on a loaded machine: a burst
      // that is due ends, and the next submission starts another (T7).
      for index in 1...20 {
        try await queue.delay("k", for: .seconds(2), value: "v\(index)")
      }
      #expect(try await queue.isPending("k"))
      try await queue.withWorker(handler: { key, value in try await log.record(key, value) }) {
        #expect(try await queue.drains(within: .seconds(10)))
        try await Task.sleep(for: .milliseconds(300))
      }
      #expect(await log.values("k") == ["v20"])
      #expect(try await queue.isPending("k") == false)
    }
  }

  @Test func cancelDropsThePendingBurstAndFlushRunsItNow() async throws {
    try await TestDatabase.withQueue("cancel-flush") { queue, _ in
      let log = RunLog()
      try await queue.withWorker(handler: { key, value in try await log.record(key, value) }) {
        try await queue.delay("cancelled", for: .seconds(1), value: "never")
        #expect(try await queue.cancel("cancelled"))
        #expect(try await queue.cancel("cancelled") == false)
        try await queue.delay("flushed", for: .seconds(60), value: "now")
        let flushed = Date()
        #expect(try await queue.flush("flushed"))
        #expect(try await TestDatabase.eventually { await log.count("flushed") == 1 })
        let run = try #require(await log.all.first)
        #expect(run.started.timeIntervalSince(flushed) < Self.late)
        #expect(try await queue.flush("flushed") == false)
        try await Task.sleep(for: .milliseconds(1200))  // past the cancelled burst's deadline
        #expect(await log.count("cancelled") == 0)
      }
    }
  }

  @Test func submissionDuringARunStartsABurstThatRunsAfterIt() async throws {
    try await TestDatabase.withQueue("during-run") { queue, _ in
      let log = RunLog()
      let handler: @Sendable (String, String) async throws -> Void = { key, value in
        // Long enough for the two submissions below to be stored while it runs, even when a
        // call takes a few hundred milliseconds on a loaded machine.
        try await log.record(key, value) { try await Task.sleep(for: .milliseconds(1500)) }
      }
      try await queue.withWorker(handler: handler) {
        try await queue.delay("k", for: .zero, value: "one")
        #expect(try await TestDatabase.eventually { await log.count("k") == 1 })
        try await queue.delay("k", for: .zero, value: "two")
        try await queue.delay("k", for: .zero, value: "three")
        #expect(
          try await TestDatabase.eventually {
            await log.all.filter { $0.finished != nil }.count == 2
          })
        try await Task.sleep(for: .milliseconds(300))
      }
      let runs = await log.all
      #expect(runs.map(\.value) == ["one", "three"])
      #expect(await log.overlapCount == 0)
      if runs.count == 2, let firstEnd = runs[0].finished {
        #expect(runs[1].started >= firstEnd)
      }
      #expect(try await queue.pendingCount() == 0)
    }
  }

  @Test func throwingHandlerIsRetriedThenKeptAsAFailure() async throws {
    struct Broken: Error {}
    try await TestDatabase.withQueue(
      "failures", maxAttempts: 3, retryBackoff: .milliseconds(20)
    ) { queue, _ in
      let log = RunLog()
      let handler: @Sendable (String, String) async throws -> Void = { key, value in
        try await log.record(key, value) { if value == "bad" { throw Broken() } }
      }
      try await queue.withWorker(handler: handler) {
        try await queue.delay("k", for: .zero, value: "bad")
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 1 })
        let failure = try #require(try await queue.failures().first)
        #expect(failure.key == "k")
        #expect(failure.value == "bad")
        #expect(failure.attempts == 3)
        #expect(failure.lastError.contains("Broken"))
        #expect(await log.count("k") == 3)
        #expect(try await queue.pendingCount() == 0)
        let runs = await log.all
        // Backoff: 20 ms, then 40 ms.
        #expect(runs[1].started.timeIntervalSince(runs[0].started) >= 0.02)
        #expect(runs[2].started.timeIntervalSince(runs[1].started) >= 0.04)

        // A new submission of the key runs as usual, and the failure stays kept (P17).
        try await queue.delay("k", for: .zero, value: "good")
        #expect(try await TestDatabase.eventually { await log.values("k").last == "good" })
        #expect(try await queue.drains(within: .seconds(10)))
        #expect(try await queue.failures() == [failure])
      }
    }
  }

  @Test func submissionWakesWorkersOnlyWhenItMovesTheEarliestDeadline() async throws {
    try await TestDatabase.withQueue("notify") { queue, _ async throws in
      #expect(try await queue.submit("a", for: .seconds(10), value: "x"))
      #expect(try await queue.submit("b", for: .seconds(20), value: "x") == false)
      #expect(try await queue.submit("a", for: .seconds(30), value: "x") == false)
      #expect(try await queue.submit("c", for: .seconds(1), value: "x"))
      #expect(try await queue.submit("d", for: .seconds(5), value: "x") == false)
    }
  }

  /// A worker claims the earliest burst and then reads the next deadline. A submission whose
  /// statement overlaps that claim sees the burst still waiting, and would not notify, while
  /// the worker's read does not see the submission yet: it would sleep until `safetyPoll`. So
  /// a submission notifies while the earliest burst is due, or less than 250 ms away.
  @Test func submissionNextToADueBurstWakesTheWorkers() async throws {
    try await TestDatabase.withQueue("notify-due") { queue, _ async throws in
      #expect(try await queue.submit("due", for: .zero, value: "x"))
      // Later than the due burst, so the old rule sent nothing: no worker runs here, so
      // "due" stays waiting, as it does while a worker is claiming it.
      #expect(try await queue.submit("later", for: .seconds(10), value: "x"))
      #expect(try await queue.submit("due", for: .zero, value: "y"))
    }
    try await TestDatabase.withQueue("notify-near") { queue, _ async throws in
      #expect(try await queue.submit("near", for: .milliseconds(100), value: "x"))
      #expect(try await queue.submit("later", for: .seconds(10), value: "x"))
    }
  }
}
