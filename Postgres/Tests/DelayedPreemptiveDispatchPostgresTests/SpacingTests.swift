import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `minimumSpacing`'s rules on the PostgreSQL queue (T1, T3, T4), at a database time the test
/// sets (``StoreHarness``): runs of one key start at least the spacing apart, a key's last start
/// outlives its burst for as long as the spacing needs it and no longer, and `cancel`, `flush`,
/// `maxSubmissions`, a takeover and the sweep of kept rows meet the spacing at exact instants,
/// beside the reference model where a step is a model operation. Nothing here waits on real
/// time: how a worker keeps the spacing in real time (across processes and clients, its retries,
/// its sweep) is ``PostgresSpacingWorkerTests``.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresSpacingTests {
  /// T1 and T4: one key submitted to every 10 ms under `.throttle(600 ms)` runs once per
  /// spacing, at the spacing's end, with the latest value; the first submission runs at once,
  /// without a spacing before it; the last one runs, last.
  @Test func aThrottledKeyRunsOncePerSpacingWithItsLatestValue() async throws {
    try await PostgresRuleTests.withStore(
      "spacing-one", options: .throttle(.milliseconds(600))
    ) { store, queue, _ in
      for index in 0..<300 {
        if index > 0 { try await store.expect(.advance(milliseconds: 10)) }
        try await store.expect(.delay(key: 0, milliseconds: 0, value: "\(index)"))
      }
      try await store.expect(.advance(milliseconds: 600))
      let runs = store.runs[0]
      // At 0 (no spacing before the first), then at each spacing's end, where the claim comes
      // before that instant's submission: the value submitted 10 ms before.
      #expect(runs.map(\.at) == [0, 600, 1200, 1800, 2400, 3000])
      #expect(runs.map(\.work) == ["0", "59", "119", "179", "239", "299"])
      #expect(try await queue.pendingCount() == 0)
    }
  }

  /// The key's last start outlives its burst: the row stays, idle (no pending burst for
  /// `pendingCount`, `isPending`, the worker tool), and a later submission still waits for the
  /// spacing; `cancel` keeps the spacing and `flush` lifts it (T3); a retried end or cancel
  /// changes nothing; and the row goes at the first claim after the spacing, not before. At a
  /// database time the test sets (``StoreHarness``), so each instant is exact.
  @Test func aKeysLastStartIsKeptForTheSpacingAndNoLonger() async throws {
    try await PostgresRuleTests.withStore(
      "spacing-record", options: DelayOptions(minimumSpacing: .seconds(1))
    ) { store, queue, client in
      func row() async throws -> KeyRow {
        try await KeyRow.of("k0", in: queue.name, client: client)
      }
      try await store.submit([.init(key: 0, milliseconds: 0, value: "a")])
      let a = try await store.claim()
      #expect(a.map(\.json) == [#""a""#])
      #expect(try await store.succeed(a) == 1)
      #expect(try await row() == .idle)
      #expect(try await queue.pendingCount() == 0)
      #expect(try await !queue.isPending("k0"))
      #expect(try await queue.runningBursts().isEmpty)
      #expect(try await queue.failures().isEmpty)
      #expect(try await queue.millisecondsUntilDue() == nil)
      #expect(try await store.succeed(a) == 0)  // a retried end matches nothing
      #expect(try await store.claim().isEmpty)  // nor claims nor sweeps the record in its spacing
      #expect(try await row() == .idle)
      let state = try await ToolRun.run(["state", "--name", queue.name])
      #expect(state.status == 0, "\(state.errors)")
      #expect(
        state.output.contains("pending: 0\nwaiting: 0\nrunning: 0\nfailures: 0\n"),
        "\(state.output)")
      #expect(
        state.output.contains("no bursts under the name \(queue.name): the queue is idle"),
        "\(state.output)")
      // The row kept for the spacing is no row in use (the names the tool lists for a name it
      // does not know).
      #expect(try await !queue.namesInUse().contains { $0.name == queue.name })

      // A submission after the burst is done still waits for the spacing from a's start.
      try await store.setNow(300)
      try await store.submit([.init(key: 0, milliseconds: 0, value: "b")])
      #expect(try await queue.isPending("k0"))
      #expect(try await queue.pendingCount() == 1)
      #expect(try await store.readDue()[0]?.at == 1000)
      try await store.setNow(999)
      #expect(try await store.claim().isEmpty)
      try await store.setNow(1000)
      let b = try await store.claim()
      #expect(b.map(\.json) == [#""b""#])
      // Lateness counts from the spacing's end.
      #expect(b.map(\.latenessMilliseconds) == [0])
      #expect(try await store.succeed(b) == 1)

      // T3: cancel drops the pending burst and keeps the spacing from b's start.
      try await store.setNow(1200)
      try await store.submit([.init(key: 0, milliseconds: 0, value: "c")])
      #expect(try await store.cancel(0))
      #expect(try await row() == .idle)
      #expect(try await !store.cancel(0))  // a retried cancel finds nothing pending
      #expect(try await row() == .idle)
      #expect(try await queue.pendingCount() == 0)
      try await store.submit([.init(key: 0, milliseconds: 0, value: "d")])
      #expect(try await store.claim().isEmpty)
      // T3: flush runs it now, without the spacing.
      #expect(try await store.flush(0))
      let d = try await store.claim()
      #expect(d.map(\.json) == [#""d""#])
      #expect(try await store.succeed(d) == 1)
      #expect(try await row() == .idle)

      // The record goes with the first claim after d's start + the spacing, not before.
      let until = try await Self.dueAt("k0", queue.name, client)
      #expect(until == StoreHarness.originSeconds + 2.2)
      try await store.setNow(2199)
      #expect(try await store.claim().isEmpty)
      #expect(try await row() == .idle)
      try await store.setNow(2200)
      #expect(try await store.claim().isEmpty)
      #expect(try await row() == .none)
      #expect(try await KeyRow.count(in: queue.name, client: client) == 0)
    }
  }

  /// `due_at` of a key's row, in Unix seconds.
  static func dueAt(_ key: String, _ name: String, _ client: PostgresClient) async throws
    -> Double
  {
    let rows = try await client.query(
      """
      SELECT extract(epoch FROM due_at)::float8 FROM dpd_bursts
      WHERE name = \(name) AND key = \(key)
      """)
    for try await due in rows.decode(Double.self) { return due }
    throw KeyMissing()
  }

  struct KeyMissing: Error {}

  /// `maxSubmissions` counts under the spacing (T1): full bursts wait for the spacing, in order,
  /// each the spacing after the one before it, and the last, partial one too.
  @Test func fullBurstsUnderSpacingRunOneSpacingApartInOrder() async throws {
    try await PostgresRuleTests.withStore(
      "spacing-full", options: DelayOptions(maxSubmissions: 3, minimumSpacing: .milliseconds(500)),
      merge: .append
    ) { store, queue, _ in
      try await store.expect(.delay(key: 0, milliseconds: 0, value: "x"))
      try await store.expect(.advance(milliseconds: 100))
      for value in ["a", "b", "c", "d", "e", "f", "g"] {
        try await store.expect(.delay(key: 0, milliseconds: 0, value: value))
      }
      try await store.expect(.advance(milliseconds: 1399))  // to 1499
      #expect(store.runs[0].map(\.work) == ["x", "a+b+c", "d+e+f"])
      try await store.expect(.advance(milliseconds: 1))
      #expect(
        store.runs[0] == [
          .init(work: "x", at: 0), .init(work: "a+b+c", at: 500), .init(work: "d+e+f", at: 1000),
          .init(work: "g", at: 1500),
        ])
      #expect(try await queue.pendingCount() == 0)
    }
  }

  /// A takeover is a run too: a claim whose lease ran out (renewed once) is taken over no sooner
  /// than the spacing after that claim, and at once then. The stale claim's worker renews once,
  /// then stops.
  @Test func aTakeoverWaitsForTheSpacing() async throws {
    try await PostgresRuleTests.withStore(
      "spacing-takeover", options: DelayOptions(minimumSpacing: .milliseconds(800))
    ) { store, _, _ in
      try await store.submit([.init(key: 0, milliseconds: 0, value: "t")])
      let stale = try #require(try await store.claim(owner: "stale", lease: 200).first)
      try await store.setNow(100)
      #expect(try await store.renew([stale], lease: 200) == [stale.claim])
      // Past the renewed lease (300), within the spacing from the claim (800).
      try await store.setNow(400)
      #expect(try await store.claim(owner: "fresh", lease: 200).isEmpty)
      #expect(try await store.readDue()[0]?.at == 800)
      try await store.setNow(799)
      #expect(try await store.claim(owner: "fresh", lease: 200).isEmpty)
      try await store.setNow(800)
      let fresh = try #require(try await store.claim(owner: "fresh", lease: 200).first)
      #expect(fresh.takenOver)
      #expect(fresh.attempt == 2)
      #expect(try await store.succeed([fresh]) == 1)
    }
  }
}
