import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A cluster of the failover tests: a primary, a synchronous hot standby (`s1`, which a
/// failover promotes), a second hot standby (`s2`, which stays read-only: the node a name that
/// moved late still points at), and the project's TCP proxy in front (`scripts/tcp-proxy.py`),
/// which the service reaches the cluster through, as it would through a DNS name, a virtual IP
/// or HAProxy. Every server is a throwaway one of `scripts/postgres.sh`, on loopback.
final class FailoverCluster: Sendable {
  let primaryState: String
  let syncState: String
  let readOnlyState: String
  let primaryURL: String
  let syncURL: String
  let readOnlyURL: String
  /// The state file of the old primary rebuilt as a standby of `s1` (scenario (e)), once made.
  var rebuiltState: String { primaryState.replacingOccurrences(of: "-primary.", with: "-p2.") }
  let proxy: TCPProxy

  /// The URL the service uses: the proxy's.
  var url: String { "postgres://postgres@127.0.0.1:\(proxy.port)/dpd" }

  private init(states: (String, String, String), urls: (String, String, String), proxy: TCPProxy) {
    (primaryState, syncState, readOnlyState) = states
    (primaryURL, syncURL, readOnlyURL) = urls
    self.proxy = proxy
  }

  /// Starts the cluster: the primary commits only once `s1` has the commit
  /// (`synchronous_standby_names = 's1'`, and `synchronous_commit = on` for the database, over
  /// the throwaway server's `off`); `s2` streams asynchronously.
  static func start() async throws -> FailoverCluster {
    let prefix = "\(NSTemporaryDirectory())dpd-failover-\(UUID().uuidString.prefix(8))"
    let states = ("\(prefix)-primary.state", "\(prefix)-s1.state", "\(prefix)-s2.state")
    do {
      return try await start(states: states)
    } catch {
      for state in [states.2, states.1, states.0] {
        try? await PostgresScript.run(["stop"], state: state)
      }
      throw error
    }
  }

  private static func start(states: (String, String, String)) async throws -> FailoverCluster {
    try await PostgresScript.run(["start"], state: states.0)
    let primaryURL = try url(ofState: states.0)
    try await TestDatabase.administer(
      "ALTER DATABASE dpd SET synchronous_commit = on", on: primaryURL)
    try await PostgresScript.run(["standby", states.1, "s1"], state: states.0)
    try await PostgresScript.run(["standby", states.2, "s2"], state: states.0)
    // Set after the standbys copied the primary's configuration: a promoted s1 waiting for a
    // synchronous standby named s1 would never commit again.
    try await synchronousStandby("s1", of: primaryURL)
    let urls = (primaryURL, try url(ofState: states.1), try url(ofState: states.2))
    return FailoverCluster(
      states: states, urls: urls, proxy: try await TCPProxy.start(to: primaryURL))
  }

  /// Makes the standby `name` the synchronous standby of the primary at `url`, and waits until
  /// the primary reports it so, before the test writes anything.
  static func synchronousStandby(_ name: String, of url: String) async throws {
    try await TestDatabase.administer(
      "ALTER SYSTEM SET synchronous_standby_names = '\(name)'", on: url)
    try await TestDatabase.administer("SELECT pg_reload_conf()", on: url)
    let synchronous = try await TestDatabase.eventually(within: .seconds(20)) {
      try await TestDatabase.withClient(url: url) { client, _ in
        for try await count in try await client.query(
          """
          SELECT count(*) FROM pg_stat_replication
          WHERE application_name = \(name) AND sync_state = 'sync'
          """
        ).decode(Int.self) {
          return count == 1
        }
        return false
      }
    }
    try #require(synchronous, "\(name) never became the synchronous standby of \(url)")
  }

  /// Sends the proxy a command (`target HOST:PORT`, `drop`, `blackhole on`…), and expects `ok`.
  func control(_ words: String...) async throws {
    let run = try await Command.run(
      "python3", [TCPProxy.script, "control", "\(proxy.controlPort)"] + words,
      timeout: .seconds(10))
    #expect(run.status == 0, "proxy \(words): \(run.output) \(run.errors)")
  }

  /// Points the proxy at the server of `url` for new connections.
  func target(_ url: String) async throws { try await proxy.target(url) }

  /// Stops the proxy and every server.
  func stop() async throws {
    proxy.stop()
    if FileManager.default.fileExists(atPath: rebuiltState) {
      try await PostgresScript.run(["stop"], state: rebuiltState)
    }
    for state in [readOnlyState, syncState, primaryState] {
      try await PostgresScript.run(["stop"], state: state)
    }
  }

  static func url(ofState state: String) throws -> String {
    let text = try String(contentsOfFile: state, encoding: .utf8)
    let line = text.split(separator: "\n").first { $0.hasPrefix("URL=") }
    return try #require(line.map { String($0.dropFirst(4)) }, "no URL in \(state): \(text)")
  }
}

/// Failovers under load, checked as Jepsen checks a queue: producers submit through the proxy
/// while three worker processes run, the primary dies (`pg_ctl stop -m immediate`), `s1` is
/// promoted and the proxy points at it; then every acknowledged `delay` must have run with its
/// value or a newer one, no two runs of a key may overlap, every worker must be alive and
/// claiming within `safetyPoll` plus the outage backoff of the switch, and every fence after the
/// switch must be greater than every fence before it. `DPD_FAILOVER_RUNS` says how many times
/// each scenario runs (default 1, as in CI); `scripts/faults.sh` runs them many times.
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresFailoverTests {
  static let runs = Int(ProcessInfo.processInfo.environment["DPD_FAILOVER_RUNS"] ?? "") ?? 1

  /// The test worker's: safety poll 200 ms, outage backoff cap 1 s; with a margin for a loaded
  /// 2-core machine.
  static let claimBound = Duration.seconds(4)

  /// (a) The primary dies, `s1` is promoted, the proxy points at it and drops every connection.
  @Test func primaryKilledStandbyPromotedLosesNothing() async throws {
    try await expectSafe("failover") { cluster in
      let crashed = monotonicSeconds()
      try await PostgresScript.run(["crash"], state: cluster.primaryState)
      try await PostgresScript.run(["promote"], state: cluster.syncState)
      try await cluster.target(cluster.syncURL)
      try await cluster.control("drop")
      return .init(crashed: crashed, switched: monotonicSeconds())
    }
  }

  /// (b) As (a), but the proxy points at the read-only `s2` for 5 s first, and then at the
  /// promoted `s1` without dropping anything: the connections made to `s2` meanwhile stay there
  /// unless the package closes them, as a DNS name that moved late leaves them.
  @Test func readOnlyNodeFirstThenPromotedStandbyLosesNothing() async throws {
    try await expectSafe("failover through a read-only node") { cluster in
      let crashed = monotonicSeconds()
      try await PostgresScript.run(["crash"], state: cluster.primaryState)
      try await cluster.target(cluster.readOnlyURL)
      try await cluster.control("drop")
      try await Task.sleep(for: .seconds(5))
      try await PostgresScript.run(["promote"], state: cluster.syncState)
      try await cluster.target(cluster.syncURL)
      return .init(crashed: crashed, switched: monotonicSeconds())
    }
  }

  /// (e) After (a), the old primary is rebuilt as a synchronous standby of the new one
  /// (`pg_basebackup` from `s1`, named `p2`), and a planned switchover moves the service back to
  /// it: `s1` stops cleanly (`pg_ctl stop -m fast`), `p2` is promoted, the proxy points at it and
  /// drops every connection. The instants are the switchover's, so that fences are checked
  /// across the second promotion; every run before it came from the first.
  @Test func switchoverBackToTheRebuiltOldPrimaryLosesNothing() async throws {
    try await expectSafe("switchover back") { cluster in
      try await PostgresScript.run(["crash"], state: cluster.primaryState)
      try await PostgresScript.run(["promote"], state: cluster.syncState)
      try await cluster.target(cluster.syncURL)
      try await cluster.control("drop")
      // The old primary's data is thrown away and made again from the new primary.
      try await PostgresScript.run(["stop"], state: cluster.primaryState)
      try await PostgresScript.run(
        ["standby", cluster.rebuiltState, "p2"], state: cluster.syncState)
      try await FailoverCluster.synchronousStandby("p2", of: cluster.syncURL)
      let rebuiltURL = try FailoverCluster.url(ofState: cluster.rebuiltState)
      let stopped = monotonicSeconds()
      try await PostgresScript.run(["down"], state: cluster.syncState)
      try await PostgresScript.run(["promote"], state: cluster.rebuiltState)
      try await cluster.target(rebuiltURL)
      try await cluster.control("drop")
      return .init(crashed: stopped, switched: monotonicSeconds())
    }
  }

  func expectSafe(
    _ scenario: String,
    _ failover:
      @escaping @Sendable (FailoverCluster) async throws ->
      PostgresOutageTests.FailoverInstants
  ) async throws {
    var outcomes: [PostgresOutageTests.RestartOutcome] = []
    for run in 1...Self.runs {
      let cluster = try await FailoverCluster.start()
      do {
        // The new primary: `s1`, or the rebuilt old primary after a switchover back to it.
        let primary: @Sendable () throws -> String? = {
          FileManager.default.fileExists(atPath: cluster.rebuiltState)
            ? try FailoverCluster.url(ofState: cluster.rebuiltState) : cluster.syncURL
        }
        let outcome = try await PostgresOutageTests.underLoad(
          load: .outsideCheck, url: cluster.url, checkerURL: primary
        ) { try await failover(cluster) }
        print("\(scenario), run \(run) of \(Self.runs): \(outcome)")
        for line in outcome.errors.prefix(20) { print("  worker log: \(line)") }
        outcomes.append(outcome)
      } catch {
        try await cluster.stop()
        throw error
      }
      try await cluster.stop()
    }
    let clean = outcomes.filter { $0.lost.isEmpty && $0.overlaps == 0 }.count
    print("\(scenario): \(clean) of \(outcomes.count) runs lost nothing and overlapped nothing")
    for outcome in outcomes {
      outcome.expectNothingLost()
      #expect(outcome.overlaps == 0)
      #expect(outcome.fencesOrdered == true)
      let first = try #require(outcome.switchToFirstClaim, "no run started after the switch")
      #expect(first < Self.claimBound, "first claim \(first) after the switch")
    }
  }
}
