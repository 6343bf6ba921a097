import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Every call of a queue on a database that was never migrated: each throws `databaseError` with
/// a SQLSTATE that means "not migrated" (`42883` when it calls one of the package's functions,
/// `42P01` when it reads a table first), `isNotMigrated` and `.permanent`, as the docs say.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresNotMigratedTests {
  @Test func everyCallOnAFreshDatabaseSaysItIsNotMigrated() async throws {
    try await TestDatabase.withFreshDatabase { url in
      try await TestDatabase.withClient(url: url) { client, configuration in
        let queue = PostgresDelayedPreemptiveQueue<String>(
          client: client, configuration: configuration, name: "fresh")
        let calls: [(String, @Sendable () async throws -> Void)] = [
          ("delay", { try await queue.delay("doc-1", for: .seconds(1), value: "v") }),
          ("cancel", { _ = try await queue.cancel("doc-1") }),
          ("flush", { _ = try await queue.flush("doc-1") }),
          ("isPending", { _ = try await queue.isPending("doc-1") }),
          ("pendingCount", { _ = try await queue.pendingCount() }),
          ("failures", { _ = try await queue.failures() }),
          ("rawFailures", { _ = try await queue.rawFailures() }),
          ("runningBursts", { _ = try await queue.runningBursts() }),
          ("retryFailure", { _ = try await queue.retryFailure("doc-1") }),
          ("discardFailure", { _ = try await queue.discardFailure("doc-1") }),
          (
            "delay(on:)",
            {
              try await client.withConnection { connection in
                try await queue.delay("doc-1", for: .seconds(1), value: "v", on: connection)
              }
            }
          ),
        ]
        var states: [String: String] = [:]
        for (name, call) in calls {
          do {
            try await call()
            Issue.record("\(name) succeeded on a database that was never migrated")
          } catch let error as PostgresDelayedPreemptiveQueueError {
            let sqlState = try #require(error.sqlState, "\(name): \(error)")
            states[name] = sqlState
            #expect(error.isNotMigrated, "\(name): \(error)")
            #expect(error.kind == .permanent, "\(name): \(error)")
            #expect(error.isPermanent, "\(name): \(error)")
          }
        }
        // The case of the issue: a submission calls `dpd_submit`, which does not exist yet.
        #expect(states["delay"] == "42883")
        #expect(Set(states.values).isSubset(of: ["42883", "42P01"]), "\(states)")
        // Once migrated, the same queue works.
        try await queue.migrate()
        try await queue.delay("doc-1", for: .seconds(1), value: "v")
        #expect(try await queue.isPending("doc-1"))
      }
    }
  }
}
