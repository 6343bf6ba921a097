import Foundation
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// (d) A worker whose wall clock jumps, as an NTP step or a wrong manual setting makes it jump:
/// one of the three worker processes runs with the project's wall-clock shim preloaded
/// (`scripts/wall-clock-shim.c`, compiled here with `cc`), which adds an offset that a file sets
/// to `CLOCK_REALTIME` alone. Its wall clock jumps an hour forward, then two hours back (an hour
/// behind), then to the real time again, while `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` run on
/// untouched, as they do when a real wall clock is stepped. What is due is decided by the
/// database's clock and leases by the worker's monotonic one, so nothing may run early, no lease
/// may be lost and nothing may be lost. (libfaketime was tried first: it shifts monotonic timer
/// deadlines too, which froze the whole process after the step back; see the shim's comment.)
@Suite(.serialized, .enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresClockJumpTests {
  /// Compiles the shim into a shared library in a fresh temporary directory.
  static func shim() async throws -> String {
    let source = PostgresScript.path.deletingLastPathComponent()
      .appendingPathComponent("wall-clock-shim.c").path
    let library = "\(NSTemporaryDirectory())dpd-wall-clock-\(UUID().uuidString.prefix(8)).so"
    let build = try await Command.run(
      "cc", ["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", library, source],
      timeout: .seconds(60))
    try #require(build.status == 0, "cc failed on \(source): \(build.output) \(build.errors)")
    return library
  }

  @Test func aWorkerWhoseClockJumpsForwardAndBackRunsNothingEarlyAndLosesNothing() async throws {
    let library = try await Self.shim()
    defer { try? FileManager.default.removeItem(atPath: library) }
    var outcomes: [PostgresOutageTests.RestartOutcome] = []
    for run in 1...PostgresFailoverTests.runs {
      let offsetFile = "\(NSTemporaryDirectory())dpd-clock-\(UUID().uuidString.prefix(8))"
      try "0\n".write(toFile: offsetFile, atomically: true, encoding: .utf8)
      defer { try? FileManager.default.removeItem(atPath: offsetFile) }
      let environment = ["LD_PRELOAD": library, "DPD_WALL_OFFSET_FILE": offsetFile]
      let outcome = try await PostgresOutageTests.underLoad(
        load: .partition, url: TestDatabase.url, firstWorkerEnvironment: environment,
        sentinelDelay: .seconds(8)
      ) {
        for offset in [3600, -3600, 0] {
          try "\(offset)\n".write(toFile: offsetFile, atomically: true, encoding: .utf8)
          try await Task.sleep(for: .seconds(offset == 0 ? 0 : 5))
        }
        return nil
      }
      print("clock jump, run \(run) of \(PostgresFailoverTests.runs): \(outcome)")
      for line in outcome.errors.prefix(20) { print("  worker log: \(line)") }
      outcomes.append(outcome)
    }
    for outcome in outcomes {
      outcome.expectNothingLost()
      #expect(outcome.overlaps == 0)
      #expect(outcome.sentinelsRan == 20)
      #expect(outcome.earlyRuns == 0)
      #expect(outcome.firstWorkerLeasesLost == 0)
      // The jumps took effect: the worker ran handlers with its clock an hour ahead and an hour
      // behind.
      let skew = try #require(outcome.firstWorkerClockSkew, "the jumping worker ran nothing")
      #expect(skew.greatest > 3000 && skew.least < -3000, "\(skew)")
    }
  }
}
