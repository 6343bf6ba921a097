import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchModel
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `merge: .append` and `maxSubmissions` across replicas (rule P10), with one in-process worker:
/// a burst's handler gets the concatenation of its submissions' arrays in submission order, a
/// submission during a run starts a new burst with its own array, a value that is no array is
/// refused alone, and a burst ends at `maxSubmissions` even before any worker claimed it.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresMergeTests {
  /// A migrated queue of `Value` with a fresh name, and its client.
  static func withQueue<Value: Codable & Sendable, Result: Sendable>(
    _ prefix: String, of type: Value.Type, merge: PostgresValueMerge = .append,
    options: DelayOptions = DelayOptions(),
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<Value>, PostgresClient) async throws -> Result
  ) async throws -> Result {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<Value>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName(prefix),
        options: options, merge: merge)
      queue.safetyPoll = .milliseconds(200)
      try await queue.migrate()
      return try await body(queue, client)
    }
  }

  @Test func fiftyKeysOfTwentySubmissionsReachTheirHandlerCompleteAndInOrder() async throws {
    try await Self.withQueue("append50", of: [String].self) { queue, _ in
      let runs = Runs<[String]>()
      try await queue.withWorker(
        concurrency: 8, handler: { key, values in await runs.add(key, values) }
      ) {
        try await withThrowingTaskGroup(of: Void.self) { group in
          for key in 0..<50 {
            group.addTask {
              for index in 0..<20 {
                try await queue.delay(
                  "k\(key)", for: .milliseconds(100), value: ["\(key)-\(index)"])
              }
            }
          }
          try await group.waitForAll()
        }
        #expect(try await queue.drains(within: .seconds(60)))
      }
      var incomplete = 0
      for key in 0..<50 {
        let received = await runs.values("k\(key)").flatMap { $0 }
        if received != (0..<20).map({ "\(key)-\($0)" }) { incomplete += 1 }
      }
      let total = await runs.all.count
      print(
        "append: 50 keys × 20 submissions in \(total) runs; incomplete or out of order: \(incomplete)"
      )
      #expect(incomplete == 0)
      #expect(total < 50 * 20)  // bursts merged submissions
    }
  }

  /// Twenty submissions to one key with `maxSubmissions: 8` make bursts of 8, 8 and 4: the
  /// first two due at once (though their deadline is a minute away), the third at its
  /// deadline (here: when flushed). With no worker claiming, the three bursts wait in one row;
  /// with a worker that claims after each submission, the full bursts run as they close. At a
  /// database time the test sets, beside the reference model.
  @Test(arguments: [false, true])
  func maxSubmissionsEightGivesRunsOfEightEightAndFour(workerDuringSubmissions: Bool)
    async throws
  {
    try await PostgresRuleTests.withStore(
      "max8", options: DelayOptions(maxSubmissions: 8), merge: .append
    ) { store, queue, _ in
      for index in 1...20 {
        let submission = ModelOperation.delay(key: 0, milliseconds: 60_000, value: "v\(index)")
        if workerDuringSubmissions {
          try await store.expect(submission)
        } else {
          try await store.submit([.init(key: 0, milliseconds: 60_000, value: "v\(index)")])
        }
      }
      if !workerDuringSubmissions {
        #expect(store.runs[0].isEmpty)
        try await store.advance(to: 0)
      }
      let eights = [(1...8), (9...16)].map { $0.map { "v\($0)" }.joined(separator: "+") }
      #expect(store.runs[0] == eights.map { .init(work: $0, at: 0) })
      // The third burst waits for its deadline.
      try await store.advance(to: 59_999)
      #expect(store.runs[0].count == 2)
      #expect(try await queue.isPending("k0"))
      try await store.setNow(60_000)
      try await store.advance(to: 60_000)
      let four = (17...20).map { "v\($0)" }.joined(separator: "+")
      #expect(
        store.runs[0] == eights.map { .init(work: $0, at: 0) } + [.init(work: four, at: 60_000)])
      #expect(try await queue.isPending("k0") == false)
    }
  }

  /// With `.replace`, the same bursts run with the last value of each. At a database time the
  /// test sets, beside the reference model, a worker claiming after each submission.
  @Test func maxSubmissionsBoundsABurstWithReplaceToo() async throws {
    try await PostgresRuleTests.withStore(
      "max8r", options: DelayOptions(maxSubmissions: 8), merge: .replace
    ) { store, queue, _ in
      for index in 1...20 {
        try await store.expect(.delay(key: 0, milliseconds: 60_000, value: "v\(index)"))
      }
      #expect(store.runs[0] == [.init(work: "v8", at: 0), .init(work: "v16", at: 0)])
      try await store.expect(.advance(milliseconds: 59_999))
      #expect(store.runs[0].count == 2)
      try await store.expect(.advance(milliseconds: 1))
      #expect(store.runs[0].map(\.work) == ["v8", "v16", "v20"])
      #expect(store.runs[0].last?.at == 60_000)
      #expect(try await queue.isPending("k0") == false)
    }
  }

  /// `maxSubmissions: 1`: every submission is a burst of its own, due at once.
  @Test func maxSubmissionsOneRunsEverySubmissionAlone() async throws {
    try await Self.withQueue(
      "max1", of: [String].self, options: DelayOptions(maxSubmissions: 1)
    ) { queue, _ in
      for index in 1...5 { try await queue.delay("k", for: .seconds(60), value: ["v\(index)"]) }
      let runs = Runs<[String]>()
      try await queue.withWorker(handler: { key, values in await runs.add(key, values) }) {
        let drained = try await queue.drains(within: .seconds(10))
        #expect(drained)
      }
      #expect(await runs.values("k") == (1...5).map { ["v\($0)"] })
    }
  }

  /// With `.append`, submissions during a run start the next burst, which never joins the
  /// running one and runs after it ends. At a database time the test sets.
  @Test func aSubmissionDuringARunIsNotMergedIntoItAndRunsAfterAlone() async throws {
    try await PostgresRuleTests.withStore("during", merge: .append) { store, queue, _ in
      try await store.submit([.init(key: 0, milliseconds: 1000, value: "a")])
      try await store.submit([.init(key: 0, milliseconds: 1000, value: "b")])
      try await store.setNow(1000)
      let first = try await store.claim()
      #expect(first.map(\.json) == [#"["a", "b"]"#])
      try await store.submit([.init(key: 0, milliseconds: 0, value: "c")])
      try await store.submit([.init(key: 0, milliseconds: 0, value: "d")])
      // Not beside the running one.
      #expect(try await store.claim().isEmpty)
      try await store.setNow(1300)
      #expect(try await store.claim().isEmpty)
      #expect(try await store.succeed(first) == 1)
      let second = try await store.claim()
      #expect(second.map(\.json) == [#"["c", "d"]"#])
      #expect(try await store.succeed(second) == 1)
      #expect(try await queue.pendingCount() == 0)
    }
  }

  /// A handler that throws with `.append` is retried with its own array, before the burst
  /// submitted during its run: no value is dropped or merged into the retry.
  @Test func aFailedRunIsRetriedWithItsOwnArrayBeforeTheBurstBehindIt() async throws {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<[String]>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("retry"),
        merge: .append)
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = .milliseconds(50)
      try await queue.migrate()
      let runs = Runs<[String]>()
      let release = Latch()
      let failedOnce = Locked(false)
      try await queue.withWorker(
        handler: { key, values in
          await runs.add(key, values)
          if values == ["a"], failedOnce.withLock({ !$0 }) {
            try await release.wait()
            failedOnce.withLock { $0 = true }
            throw TestFailure()
          }
        }
      ) {
        try await queue.delay("k", for: .zero, value: ["a"])
        #expect(try await TestDatabase.eventually { await runs.all.count == 1 })
        try await queue.delay("k", for: .zero, value: ["b"])
        release.open()
        #expect(try await queue.drains(within: .seconds(10)))
      }
      #expect(await runs.values("k") == [["a"], ["a"], ["b"]])
    }
  }

  /// A value that does not encode as a JSON array is refused with a typed error naming its key,
  /// before it joins a batch: the submissions sent beside it are all stored and run.
  @Test func aValueThatIsNoArrayGetsATypedErrorAndLosesNothing() async throws {
    try await Self.withQueue("noarray", of: Payload.self) { queue, _ in
      let outcomes = try await withThrowingTaskGroup(of: (Int, (any Error)?).self) { group in
        for index in 0..<40 {
          group.addTask {
            let value: Payload = index == 17 ? .note("not a list") : .items(["i\(index)"])
            do {
              try await queue.delay("k\(index)", for: .milliseconds(50), value: value)
              return (index, nil)
            } catch {
              return (index, error)
            }
          }
        }
        return try await group.reduce(into: [Int: (any Error)?]()) { $0[$1.0] = $1.1 }
      }
      let refused = outcomes.filter { $0.value != nil }
      #expect(refused.keys.sorted() == [17])
      let error = try #require(refused[17] ?? nil)
      guard
        case .valueNotEncodable(let key, let reason)? =
          error as? PostgresDelayedPreemptiveQueueError
      else {
        Issue.record("not a typed error: \(error)")
        return
      }
      #expect(key == "k17")
      #expect(reason.contains("JSON array") && reason.contains("JSON string"))
      #expect(try await queue.isPending("k17") == false)
      let runs = Runs<Payload>()
      try await queue.withWorker(handler: { key, value in await runs.add(key, value) }) {
        let drained = try await queue.drains(within: .seconds(10))
        #expect(drained)
      }
      let ran = await runs.all
      #expect(ran.count == 39)
      #expect(ran.allSatisfy { $0.value == .items(["i\($0.key.dropFirst())"]) })
    }
  }

  /// The same value is accepted by a `.replace` queue: the check is `.append`'s alone.
  @Test func replaceTakesAValueThatIsNoArray() async throws {
    try await Self.withQueue("replaceany", of: Payload.self, merge: .replace) { queue, _ in
      try await queue.delay("k", for: .seconds(60), value: .note("any JSON"))
      #expect(try await queue.isPending("k"))
    }
  }

  /// Cancelling a key drops the pending burst behind its running one, and keeps the bursts that
  /// reached `maxSubmissions`: they are decided runs (C4), as in-process, where the keyed queue
  /// with the same submissions runs "a", then "c" and "e" after it, and drops "f".
  @Test func cancelKeepsTheClosedBurstsBehindTheRunningOne() async throws {
    try await Self.withQueue(
      "cancel", of: [String].self, options: DelayOptions(maxSubmissions: 2)
    ) { queue, _ in
      let runs = Runs<[String]>()
      let release = Latch()
      try await queue.withWorker(
        handler: { key, values in
          await runs.add(key, values)
          try await release.wait()
        }
      ) {
        try await queue.delay("k", for: .zero, value: ["a"])
        #expect(try await TestDatabase.eventually { await runs.all.count == 1 })
        for value in ["b", "c", "d", "e", "f"] {
          try await queue.delay("k", for: .seconds(60), value: [value])
        }
        #expect(try await queue.cancel("k"))
        release.open()
        #expect(try await queue.drains(within: .seconds(10)))
      }
      #expect(await runs.values("k") == [["a"], ["b", "c"], ["d", "e"]])
    }
  }
}

struct TestFailure: Error {}

/// A value that encodes as a JSON array (`items`) or as a JSON string (`note`).
enum Payload: Codable, Sendable, Hashable {
  case items([String])
  case note(String)

  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .items(let items): try container.encode(items)
    case .note(let note): try container.encode(note)
    }
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let items = try? container.decode([String].self) {
      self = .items(items)
    } else {
      self = .note(try container.decode(String.self))
    }
  }
}

/// The runs a handler saw, in the order they started.
actor Runs<Value: Sendable> {
  private(set) var all: [(key: String, value: Value)] = []

  func add(_ key: String, _ value: Value) { all.append((key, value)) }
  func values(_ key: String) -> [Value] { all.filter { $0.key == key }.map(\.value) }
}
