import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The claim loop's spare connection (``SpareConnection``) against the real server: when the
/// handlers keep every connection of the pool, the claim loop still claims, on a connection of
/// its own, once it has waited ``Worker/spareDelay`` for the pool.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresSpareConnectionTests {
  /// Handlers that hold every connection of a pool of two until a later burst runs: that burst
  /// is claimed through the spare connection. Without it, its claim would wait for the pool,
  /// which nothing frees (no `runTimeout`), and fail after `connectionTimeout` again and again.
  @Test func aPoolThatHandlersKeepBusyStillLetsTheWorkerClaim() async throws {
    let name = TestDatabase.uniqueName("spare-busy")
    try await TestDatabase.withClient(maximumConnections: 2) { client, pair in
      var made = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: pair, name: name)
      made.runTimeout = nil
      made.safetyPoll = .milliseconds(200)
      let queue = made
      try await queue.migrate()
      try await TestDatabase.withClient { submitter, configuration in
        // Submitted through a client of their own, so that no submission takes one of the pair.
        let submissions = PostgresDelayedPreemptiveQueue<String>(
          client: submitter, configuration: configuration, name: name)
        for index in 1...pair.options.maximumConnections {
          try await submissions.delay("hold-\(index)", for: .zero, value: "hold")
        }
        let entered = Locked(0)
        let holding = Locked(0)
        let laterRan = Latch()
        let worker = Task {
          try await queue.run(concurrency: 4) { run in
            guard run.value == "hold" else { return laterRan.open() }
            // Waits with a connection of the pool, or for one, until the later burst ran.
            entered.withLock { $0 += 1 }
            try await client.withConnection { _ in
              holding.withLock { $0 += 1 }
              try await laterRan.wait()
            }
          }
        }
        defer { worker.cancel() }
        // Both handlers ask the pool for a connection, and one has it: the pool's two are then
        // both spoken for (the worker's listener holds one for as long as it listens, so the
        // second handler waits for one; or, while the listener waits, both handlers hold one).
        // Nothing it lends is given back before the later burst runs.
        #expect(
          try await TestDatabase.eventually {
            entered.withLock { $0 } == 2 && holding.withLock { $0 } >= 1
          })
        try await submissions.delay("later", for: .zero, value: "later")
        #expect(
          try await TestDatabase.eventually(within: .seconds(30)) { laterRan.isOpen },
          "the later burst was not claimed while the handlers kept the pool busy")
        #expect(try await submissions.drains(within: .seconds(20)))
      }
    }
  }
}
