import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A partition between the service and its database: the project's TCP proxy forwards nothing
/// and closes nothing (`blackhole on`), as a network that drops packets does. No FIN and no RST
/// reach the client, so nothing but the package's own bound ends a call, and nothing but the
/// package closes the connection the call was sent on.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresPartitionTests {
  /// A call sent into the partition ends within `connectionTimeout` with `outcomeUnknown`, and
  /// its connection is closed rather than given back to the pool: a connection that carried no
  /// answer within the bound is the package's sign of a dead connection, its keepalive. Before,
  /// the connection stayed leased to a task that waited for an answer as long as the kernel
  /// retransmits (15 minutes with Linux's defaults), and the proxy kept it open.
  @Test func aCallWithNoAnswerWithinTheBoundClosesItsConnection() async throws {
    let proxy = try await TCPProxy.start(to: TestDatabase.url)
    defer { proxy.stop() }
    let url = try proxy.url(through: TestDatabase.url)
    try await TestDatabase.withQueue("partition-call", url: url) { unbounded, _ in
      var bounded = unbounded
      bounded.connectionTimeout = .seconds(1)
      let queue = bounded
      _ = try await queue.pendingCount()
      let before = try await proxy.openConnections()
      #expect(before >= 1)

      try await proxy.control("blackhole", "on")
      let start = ContinuousClock.now
      do {
        _ = try await queue.cancel("partitioned")
        Issue.record("a call through a partition returned")
      } catch PostgresDelayedPreemptiveQueueError.outcomeUnknown(let key, _, _, let reason) {
        #expect(key == "partitioned")
        #expect(reason.contains("no answer within"), "\(reason)")
      }
      let took = ContinuousClock.now - start
      #expect(took < .seconds(3), "the call took \(took) with a bound of 1 s")
      // The connection the call was sent on closes: the proxy forwards one connection fewer.
      let closed = try await TestDatabase.eventually(within: .seconds(5)) {
        try await proxy.openConnections() < before
      }
      let status = try await proxy.control("status")
      #expect(closed, "the silent connection stayed open (\(before) before): \(status)")

      // Healed: the next calls are answered, on connections that work.
      try await proxy.control("blackhole", "off")
      let answered = try await TestDatabase.eventually(
        within: .seconds(10), every: .milliseconds(100)
      ) {
        (try? await queue.cancel("healed")) != nil
      }
      #expect(answered)
    }
  }

  /// (c) One worker partitioned from the database for twice its lease, under load: its
  /// connections carry nothing and close nothing, while the database, the producers and the
  /// other workers go on. Its runs' leases are taken over, their fenced writes land over no
  /// greater fence, and it claims again on its own once the partition heals.
  @Test func aWorkerPartitionedForTwiceItsLeaseLosesNothingAndResumes() async throws {
    try await expectSafe("partition of 2 leases", for: .seconds(4))
  }

  /// (c) As above, for ten times the lease: long enough that every connection of the
  /// partitioned worker carries a call that gets no answer within its bound.
  @Test func aWorkerPartitionedForTenTimesItsLeaseLosesNothingAndResumes() async throws {
    try await expectSafe("partition of 10 leases", for: .seconds(20))
  }

  func expectSafe(_ scenario: String, for partition: Duration) async throws {
    var outcomes: [PostgresOutageTests.RestartOutcome] = []
    for run in 1...PostgresFailoverTests.runs {
      let proxy = try await TCPProxy.start(to: TestDatabase.url)
      defer { proxy.stop() }
      let outcome = try await PostgresOutageTests.underLoad(
        load: .partition, url: TestDatabase.url,
        partitionedURL: try proxy.url(through: TestDatabase.url)
      ) {
        let start = monotonicSeconds()
        try await proxy.control("blackhole", "on")
        try await Task.sleep(for: partition)
        try await proxy.control("blackhole", "off")
        return .init(crashed: start, switched: monotonicSeconds())
      }
      print("\(scenario), run \(run) of \(PostgresFailoverTests.runs): \(outcome)")
      for line in outcome.errors.prefix(20) { print("  worker log: \(line)") }
      outcomes.append(outcome)
    }
    let clean = outcomes.filter { $0.lost.isEmpty && $0.overlaps == 0 }.count
    print("\(scenario): \(clean) of \(outcomes.count) runs lost nothing and overlapped nothing")
    for outcome in outcomes {
      outcome.expectNothingLost()
      #expect(outcome.overlaps == 0)
      #expect(outcome.staleWritesApplied == 0)
      let resumed = try #require(
        outcome.healToFirstClaim, "the partitioned worker ran nothing after the heal")
      #expect(resumed < PostgresFailoverTests.claimBound, "first claim \(resumed) after the heal")
    }
  }
}
