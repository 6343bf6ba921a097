import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P9: a key appears in the log only at debug level, so that a service with millions of keys
/// can log at info without logging its keys. Drives every path that logs about one burst (a
/// retry, a kept failure, a value that no longer decodes, a takeover, a retried and a discarded
/// kept failure) and checks every line above debug, message and metadata.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresKeyLogTests {
  struct Refused: Error, CustomStringConvertible {
    var description: String { "refused on purpose" }
  }

  @Test func noLineAboveDebugContainsAKey() async throws {
    let logs = LogCollector()
    let marker = "keyinlog\(UUID().uuidString.prefix(6).lowercased())"
    let (kept, retried, undecodable, taken) = (
      "\(marker)-kept", "\(marker)-retried", "\(marker)-undecodable", "\(marker)-taken"
    )
    try await TestDatabase.withClient { client, configuration in
      var configured = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("keylog"),
        lease: .seconds(3), maxAttempts: 2, logger: logs.logger())
      configured.safetyPoll = .milliseconds(100)
      configured.retryBackoff = .milliseconds(20)
      let queue = configured
      try await queue.migrate()
      // A claim that its owner never ends: the worker takes it over once its lease runs out.
      try await queue.delay(taken, for: .zero, value: "t")
      #expect(try await queue.claim(limit: 1, owner: "gone").count == 1)
      // A value that a `String` queue cannot decode, submitted through SQL.
      let name = queue.name
      try await PostgresSQLFunctionTests.sql(
        client, "SELECT dpd_delay(\(name), \(undecodable), interval '0', '42'::jsonb)")
      let failedOnce = Locked<Set<String>>([])
      let runs = Runs<String>()
      try await queue.withWorker(
        handler: { key, value in
          await runs.add(key, value)
          if key == kept { throw Refused() }
          if key == retried, failedOnce.withLock({ $0.insert(key).inserted }) { throw Refused() }
        }
      ) {
        try await queue.delay(kept, for: .zero, value: "k")
        try await queue.delay(retried, for: .zero, value: "r")
        #expect(
          try await TestDatabase.eventually(within: .seconds(20)) {
            let failures = try await queue.rawFailures().count
            let (retries, takeovers) = (await runs.values(retried), await runs.values(taken))
            return failures == 2 && retries.count == 2 && takeovers.count == 1
          })
        #expect(try await queue.retryFailure(kept))
        #expect(try await TestDatabase.eventually { try await queue.rawFailures().count == 2 })
        #expect(try await queue.discardFailure(undecodable))
        #expect(try await queue.discardFailure(kept))
      }
    }
    let lines = logs.lines
    // Each path was taken, and named its key at debug level.
    for message in ["burst kept as failed", "retrying with backoff", "took over a burst"] {
      #expect(lines.contains { $0.level > .debug && $0.message.contains(message) }, "\(lines)")
    }
    // One run, not "1 runs": the value that does not decode is kept after its first. (A lease
    // of 3 s, so that a loaded machine does not lose a run's lease before its end is recorded.)
    #expect(
      lines.contains { $0.message.hasPrefix("burst kept as failed after 1 run: ") }, "\(lines)")
    #expect(lines.contains { $0.message.hasPrefix("burst kept as failed after 2 runs: ") })
    for key in [kept, retried, undecodable, taken] {
      #expect(lines.contains { $0.level == .debug && "\($0)".contains(key) }, "\(key): \(lines)")
    }
    let leaking = lines.filter { $0.level > .debug && "\($0)".contains(marker) }
    #expect(leaking.isEmpty, "lines above debug level with a key: \(leaking)")
  }
}
