import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P8: one caller's bad input never fails another caller's submission; and P13:
/// durations saturate as in-process.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresBatchIsolationTests {
  static let badKeys = ["nul\0key", String(repeating: "k", count: 10_000)]

  @Test func badKeysAndValuesFailAloneAmongConcurrentGoodSubmissions() async throws {
    try await TestDatabase.withQueue("isolation") { queue, _ async throws in
      var failedGood = 0
      var badErrors: [PostgresDelayedPreemptiveQueueError] = []
      for trial in 0..<5 {
        let outcomes = await withTaskGroup(of: (Bool, Result<Void, any Error>).self) { group in
          for index in 0..<100 {
            group.addTask {
              let result = await Result(catching: {
                try await queue.delay("good-\(trial)-\(index)", for: .seconds(60), value: "g")
              })
              return (true, result)
            }
            if index % 33 == 0 {
              group.addTask {
                (
                  false,
                  await Result(catching: {
                    try await queue.delay(Self.badKeys[0], for: .zero, value: "x")
                  })
                )
              }
              group.addTask {
                (
                  false,
                  await Result(catching: {
                    try await queue.delay(Self.badKeys[1], for: .zero, value: "x")
                  })
                )
              }
              group.addTask {
                (
                  false,
                  await Result(catching: {
                    try await queue.delay("nul-value", for: .zero, value: "a\0b")
                  })
                )
              }
            }
          }
          return await group.reduce(into: []) { $0.append($1) }
        }
        for (good, result) in outcomes {
          switch (good, result) {
          case (true, .failure): failedGood += 1
          case (false, .failure(let error as PostgresDelayedPreemptiveQueueError)):
            badErrors.append(error)
          case (false, let other): Issue.record("a bad submission gave \(other)")
          default: break
          }
        }
      }
      print("isolation: 500 good submissions among 60 bad ones; good that failed: \(failedGood)")
      #expect(failedGood == 0)
      #expect(badErrors.count == 60)
      #expect(
        badErrors.allSatisfy {
          switch $0 {
          case .invalidKey, .valueNotEncodable: true
          default: false
          }
        })
      #expect(try await queue.pendingCount() == 500)
      #expect(try await !queue.isPending("nul-value"))
    }
  }

  @Test func invalidKeyErrorsSayWhatIsWrong() async throws {
    try await TestDatabase.withQueue("invalid-key") { queue, _ async throws in
      do {
        try await queue.delay(Self.badKeys[1], for: .zero, value: "x")
        Issue.record("a 10 KB key was accepted")
      } catch let error as PostgresDelayedPreemptiveQueueError {
        #expect(error.description.contains("10000 bytes"))
        #expect(error.description.count < 400)
      }
      await #expect(throws: PostgresDelayedPreemptiveQueueError.self) {
        try await queue.cancel(Self.badKeys[0])
      }
      let longest = String(
        repeating: "é", count: PostgresDelayedPreemptiveQueue<String>.maximumKeyBytes / 2)
      try await queue.delay(longest, for: .seconds(60), value: "x")
      #expect(try await queue.isPending(longest))
      // A backslash before "u0000" is an escaped backslash, not a NUL: stored.
      try await queue.delay("backslash", for: .seconds(60), value: "\\u0000")
      #expect(try await queue.isPending("backslash"))
    }
  }

  /// If the database still refuses a batch for one submission's data, the batch is split and
  /// every other submission is stored. (Validation stops such a submission before it is
  /// batched; this test hands one to the batcher directly.)
  @Test func batchRefusedForOneSubmissionIsSplitSoTheOthersAreStored() async throws {
    try await TestDatabase.withQueue("split") { queue, _ async throws in
      let results = await withTaskGroup(of: (String, Bool).self) { group in
        for index in 0..<60 {
          group.addTask {
            let key = index == 30 ? "bad\0" : "split-\(index)"
            let submission = DelayStatement.Submission(
              key: key, json: "\"v\"", delayMilliseconds: 60_000)
            do {
              _ = try await queue.submissions.submit(submission, using: queue)
              return (key, true)
            } catch let error as PostgresDelayedPreemptiveQueueError {
              if case .databaseError(_, let sqlState, _) = error, sqlState.hasPrefix("22") {
                return (key, false)
              }
              Issue.record("unexpected \(error)")
              return (key, false)
            } catch {
              Issue.record("raw error \(error)")
              return (key, false)
            }
          }
        }
        return await group.reduce(into: [String: Bool]()) { $0[$1.0] = $1.1 }
      }
      #expect(results["bad\0"] == false)
      #expect(results.filter { $0.key != "bad\0" && !$0.value }.isEmpty)
      #expect(try await queue.pendingCount() == 59)
    }
  }

  /// Every string a run receives is the one submitted, whether `jsonb` stored it with escapes
  /// (which `JSONDecoder` reads) or without (read directly, see `ValueCodec.decode`).
  @Test func stringValuesReachTheirRunsAsSubmitted() async throws {
    try await TestDatabase.withQueue("string-values") { queue, _ async throws in
      let strings = PostgresSubmissionCheckTests.strings
      for (index, string) in strings.enumerated() {
        try await queue.delay("s\(index)", for: .zero, value: string)
      }
      let ran = RunLog()
      try await queue.withWorker(handler: { key, value in try await ran.record(key, value) }) {
        () async throws in
        for (index, string) in strings.enumerated() {
          #expect(try await TestDatabase.eventually { await ran.values("s\(index)") == [string] })
        }
      }
    }
  }

  @Test func durationsBeyondAnIntervalSaturateToNever() async throws {
    try await TestDatabase.withQueue(
      "saturate", options: DelayOptions(maxWait: .seconds(Int64.max))
    ) { queue, client in
      try await queue.delay("forever", for: .seconds(Int64.max), value: "x")
      try await queue.delay("forever", for: .seconds(Int64.max), value: "y")
      try await queue.delay("negative", for: .seconds(Int64.min), value: "z")
      #expect(try await queue.isPending("forever"))
      // Due in about 200 years ("never"), by its row rather than by waiting to see it not run.
      var saturated: [Bool] = []
      for try await due in try await client.query(
        """
        SELECT due_at > dpd_now() + interval '199 years' FROM dpd_bursts
        WHERE name = \(queue.name) AND key = 'forever'
        """
      ).decode(Bool.self) {
        saturated.append(due)
      }
      #expect(saturated == [true])
      let ran = RunLog()
      try await queue.withWorker(handler: { key, value in try await ran.record(key, value) }) {
        () async throws in
        #expect(try await TestDatabase.eventually { await ran.count("negative") == 1 })
        #expect(await ran.count("forever") == 0)
        #expect(try await queue.flush("forever"))
        #expect(try await TestDatabase.eventually { await ran.values("forever") == ["y"] })
      }
    }
  }
}

extension Result where Failure == any Error {
  init(catching body: () async throws -> Success) async {
    do {
      self = .success(try await body())
    } catch {
      self = .failure(error)
    }
  }
}

/// The checks made before a submission joins a batch, without a server.
@Suite struct PostgresSubmissionCheckTests {
  @Test(arguments: [
    ("\"a\\u0000b\"", true),
    ("\"\\u0000\"", true),
    ("{\"k\":[1,\"\\u0000\"]}", true),
    ("\"a\\\\u0000b\"", false),  // an escaped backslash, then the text u0000
    ("\"a\\\\\\u0000b\"", true),  // an escaped backslash, then a NUL
    ("\"u0000\"", false),
    ("\"\\u00001\"", true),
  ])
  func jsonHoldsNULOnlyForAnEscapedNULCharacter(json: String, holdsNUL: Bool) {
    #expect(ValueCodec.holdsNUL(json) == holdsNUL)
  }

  /// Strings that PostgreSQL's `jsonb` writes with an escape (a quote, a backslash, the
  /// control characters) and without (the others), and the empty string.
  static let strings = [
    "", "plain", "é日本🎉", "quote\"d", "back\\slash", "tab\tnew\nline", "\u{1}ctl", "slash/",
    "\u{7F}del", "\u{2028}sep",
  ]

  /// A string's JSON read without `JSONDecoder` when it has no escape gives what
  /// `JSONDecoder` gives, and any other JSON goes to `JSONDecoder`.
  @Test(arguments: strings)
  func stringsDecodeAsJSONDecoderDecodesThem(string: String) throws {
    let json = String(decoding: try JSONEncoder().encode(string), as: UTF8.self)
    let decoded = try ValueCodec.decode(String.self, from: json, key: "k")
    let byJSONDecoder = try JSONDecoder().decode(String.self, from: Data(json.utf8))
    #expect(decoded == string)
    #expect(decoded == byJSONDecoder)
    #expect((ValueCodec.unescapedString(json) != nil) == !json.contains("\\"))
  }

  @Test func onlyAJSONStringWithoutAnEscapeIsReadDirectly() throws {
    #expect(ValueCodec.unescapedString("\"abc\"") == "abc")
    #expect(ValueCodec.unescapedString("\"\"") == "")
    #expect(ValueCodec.unescapedString("\"a\\\"b\"") == nil)
    #expect(ValueCodec.unescapedString("\"a\\u0041\"") == nil)
    #expect(ValueCodec.unescapedString("[\"a\"]") == nil)
    #expect(ValueCodec.unescapedString("12") == nil)
    #expect(ValueCodec.unescapedString("\"") == nil)
    let escaped = try ValueCodec.decode(String.self, from: "\"a\\u0041\"", key: "k")
    let array = try ValueCodec.decode([String].self, from: "[\"a\"]", key: "k")
    #expect(escaped == "aA")
    #expect(array == ["a"])
    #expect(throws: PostgresDelayedPreemptiveQueueError.self) {
      try ValueCodec.decode(String.self, from: "12", key: "k")
    }
  }

  @Test func durationsSaturateAtTwoHundredYears() {
    #expect(Duration.seconds(Int64.max).milliseconds == Duration.longestMilliseconds)
    #expect(Duration.seconds(2).milliseconds == 2000)
    #expect(Duration.milliseconds(1.5).milliseconds == 1.5)
  }
}
