import DelayedPreemptiveDispatch
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A worker pointed at a real hot standby (`scripts/postgres.sh standby`: `pg_basebackup -R` of
/// the fault server, streaming from it), as a service whose database name still points at the
/// old node after a failover is: its claims meet SQLSTATE 25006 and its LISTEN "cannot execute
/// LISTEN during recovery". Both are an outage, said once per loop and never as a defect, with
/// the SQLSTATE kept; a producer gets a typed error that says the node is read-only. When the
/// standby is promoted, the worker claims again on its own, and every fence it hands out is
/// greater than every fence the old primary handed out before the standby had replayed them.
extension FaultServerSuites {
  @Suite(
    .serialized,
    .enabled(if: FaultServer.isConfigured && TestDatabase.isConfigured, FaultServer.skipReason))
  struct PostgresStandbyTests {
    /// Runs `body` with the URL of a fresh hot standby of the fault server, and the state file
    /// that `scripts/postgres.sh` controls it by; stops it afterwards.
    static func withStandby(_ body: (_ url: String, _ state: String) async throws -> Void)
      async throws
    {
      let state = "\(NSTemporaryDirectory())dpd-standby-\(UUID().uuidString.prefix(8)).state"
      try await PostgresScript.run(["standby", state], state: FaultServer.state)
      let text = try String(contentsOfFile: state, encoding: .utf8)
      let url = try #require(
        text.split(separator: "\n").first { $0.hasPrefix("URL=") }.map { String($0.dropFirst(4)) },
        "no URL in the standby's state file: \(text)")
      do {
        try await body(url, state)
      } catch {
        try await PostgresScript.run(["stop"], state: state)
        throw error
      }
      try await PostgresScript.run(["stop"], state: state)
    }

    /// Waits until the standby has replayed everything the primary has written so far.
    static func caughtUp(primary: PostgresClient, standby: PostgresClient) async throws -> Bool {
      var target = ""
      for try await lsn in try await primary.query("SELECT pg_current_wal_lsn()::text").decode(
        String.self)
      {
        target = lsn
      }
      let lsn = target
      return try await TestDatabase.eventually(within: .seconds(20)) {
        for try await done in try await standby.query(
          "SELECT pg_last_wal_replay_lsn() >= \(lsn)::pg_lsn"
        ).decode(Bool.self) {
          return done
        }
        return false
      }
    }

    @Test func aStandbyIsAnOutageSaidOnceAndItsPromotionIsClaimedWithGreaterFences() async throws {
      let name = TestDatabase.uniqueName("standby")
      let logs = LogCollector()
      try await TestDatabase.withClient(url: FaultServer.url) { primary, primaryConfiguration in
        let onPrimary = PostgresDelayedPreemptiveQueue<String>(
          client: primary, configuration: primaryConfiguration, name: name)
        try await onPrimary.migrate()
        try await Self.withStandby { standbyURL, standbyState in
          // Fences handed out by the old primary while the standby streams from it: three runs.
          let ranOnPrimary = Locked<[Int64]>([])
          try await TestDatabase.whileWorking({
            try await onPrimary.run(concurrency: 1) { run in
              ranOnPrimary.withLock { $0.append(run.fence) }
            }
          }) {
            for index in 0..<3 {
              try await onPrimary.delay("before-\(index)", for: .zero, value: "v")
            }
            #expect(try await TestDatabase.eventually { ranOnPrimary.withLock { $0.count } == 3 })
          }
          try await onPrimary.delay("k", for: .zero, value: "due on the standby")
          try await TestDatabase.withClient(url: standbyURL) { standby, configuration in
            #expect(try await Self.caughtUp(primary: primary, standby: standby))
            var made = PostgresDelayedPreemptiveQueue<String>(
              client: standby, configuration: configuration, name: name, lease: .seconds(30),
              logger: logs.logger())
            made.safetyPoll = .milliseconds(200)
            made.outageBackoff = .milliseconds(400)
            let queue = made
            let ran = Locked<[(value: String, fence: Int64)]>([])
            try await TestDatabase.whileWorking({
              try await queue.run(concurrency: 2) { run in
                ran.withLock { $0.append((run.value, run.fence)) }
              }
            }) { () async throws in
              // A producer on the standby: a typed error that says the node is read-only.
              var reason = ""
              do {
                try await queue.delay("p", for: .zero, value: "refused")
              } catch PostgresDelayedPreemptiveQueueError.databaseUnreachable(_, _, let why) {
                reason = why
              }
              #expect(reason.contains("the node is read-only"), "\(reason)")
              // Several claim and LISTEN attempts, each refused by the standby.
              try await Task.sleep(for: .seconds(3))
              #expect(ran.withLock { $0.isEmpty })
              let warnings = logs.lines.filter { $0.level >= .warning }
              #expect(
                !logs.contains("a defect of this package", atLeast: .trace),
                "\(warnings)")
              // Each loop says once that the database is unavailable, naming the read-only node,
              // however many of its attempts were refused.
              let listening = warnings.filter {
                $0.message.contains("database unavailable while listening for wake-ups")
              }
              #expect(listening.count == 1, "\(warnings)")
              #expect(
                listening.first?.message.contains("SQLSTATE 25006") == true, "\(listening)")
              let claiming = warnings.filter {
                $0.message.contains("database unavailable while claiming")
              }
              #expect(claiming.count == 1, "\(warnings)")
              #expect(claiming.first?.message.contains("read-only") == true, "\(claiming)")

              // The failover: the standby becomes the primary, and the worker claims on its own.
              let promoted = ContinuousClock.now
              try await PostgresScript.run(["promote"], state: standbyState)
              #expect(
                try await TestDatabase.eventually(within: .seconds(20)) {
                  ran.withLock { $0.contains { $0.value == "due on the standby" } }
                })
              let resumed = ContinuousClock.now - promoted
              try await queue.delay("after", for: .zero, value: "after the promotion")
              #expect(
                try await TestDatabase.eventually(within: .seconds(20)) {
                  ran.withLock { $0.contains { $0.value == "after the promotion" } }
                })
              let before = ranOnPrimary.withLock { $0 }
              let after = ran.withLock { $0.map(\.fence) }
              print(
                "standby: refused as read-only, then claimed \(resumed) after the promotion; "
                  + "fences before \(before), after \(after)")
              // safetyPoll + outageBackoff, with a margin for a loaded machine.
              #expect(resumed < .seconds(5), "\(resumed)")
              #expect(after.allSatisfy { fence in before.allSatisfy { $0 < fence } })
            }
          }
        }
      }
    }
  }
}
