import DelayedPreemptiveDispatch
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A read-only node (SQLSTATE 25006: a standby, or the old primary after a failover, reached
/// through a name or address that moved) is an outage, not a defect, and a connection that met
/// one is closed rather than reused. A database whose sessions default to read-only
/// transactions stands for the node: its sessions are ended, as a failover ends them, and those
/// made meanwhile stay read-only after the database is writable again, as connections to the
/// old node stay there, unless closed.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresReadOnlyNodeTests {
  @Test func aReadOnlyNodeIsAnOutageAndItsConnectionsAreNotReused() async throws {
    try await TestDatabase.withFreshDatabase { url in
      let database = String(url[url.index(after: url.lastIndex(of: "/")!)...])
      let logs = LogCollector()
      try await TestDatabase.withClient(url: url) { client, configuration in
        var made = PostgresDelayedPreemptiveQueue<String>(
          client: client, configuration: configuration, name: "read-only", lease: .seconds(30),
          logger: logs.logger())
        made.safetyPoll = .milliseconds(200)
        made.outageBackoff = .milliseconds(400)
        let queue = made
        try await queue.migrate()
        let ran = Locked<[String]>([])
        try await TestDatabase.whileWorking({
          try await queue.run(concurrency: 2) { run in ran.withLock { $0.append(run.value) } }
        }) { () async throws in
          try await queue.delay("k", for: .zero, value: "before")
          #expect(try await TestDatabase.eventually { ran.withLock { $0 } == ["before"] })

          try await TestDatabase.administer(
            "ALTER DATABASE \(database) SET default_transaction_read_only = on")
          try await Self.endSessions(of: database)
          // Every submission now meets a read-only session: a typed error that says so.
          var refusal: PostgresDelayedPreemptiveQueueError?
          for _ in 0..<100 where refusal == nil {
            do {
              try await queue.delay("k", for: .zero, value: "refused")
            } catch let error as PostgresDelayedPreemptiveQueueError {
              if case .databaseUnreachable(_, _, let reason) = error, reason.contains("read-only") {
                refusal = error
              }
            }
            try await Task.sleep(for: .milliseconds(20))
          }
          #expect(refusal != nil, "no submission was refused as read-only")
          // Let the worker meet it too, at least once per loop's backoff.
          try await Task.sleep(for: .seconds(1))

          try await TestDatabase.administer(
            "ALTER DATABASE \(database) RESET default_transaction_read_only")
          // The sessions made while the node was read-only are still read-only: each one that
          // a call meets is closed, so the pool soon holds writable ones only.
          var written = false
          for _ in 0..<60 where !written {
            do {
              try await queue.delay("k", for: .zero, value: "after")
              written = true
            } catch {
              try await Task.sleep(for: .milliseconds(50))
            }
          }
          #expect(written, "a submission never got a writable connection again")
          #expect(
            try await TestDatabase.eventually(within: .seconds(20)) {
              ran.withLock { $0.last } == "after"
            })
        }
        #expect(!ran.withLock { $0 }.contains("refused"))
        #expect(!logs.contains("a defect of this package", atLeast: .trace))
      }
    }
  }

  /// Ends every session of `database` but the caller's, as a failover or a restart does.
  static func endSessions(of database: String) async throws {
    try await TestDatabase.administer(
      """
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = '\(database)' AND pid <> pg_backend_pid()
      """)
  }
}
