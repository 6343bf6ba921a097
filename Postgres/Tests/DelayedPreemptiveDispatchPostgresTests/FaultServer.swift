import Foundation
import Testing

/// A second throwaway server that the fault tests restart and freeze, so that those outages
/// reach no other test: `DPD_POSTGRES_FAULT_URL`, and `DPD_POSTGRES_FAULT_STATE`, the state file
/// of `scripts/postgres.sh` that controls it. `.ci/run` starts it; under CI a missing one fails
/// `PostgresEnvironmentTests`.
enum FaultServer {
  static let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_FAULT_URL"] ?? ""
  static let state = ProcessInfo.processInfo.environment["DPD_POSTGRES_FAULT_STATE"] ?? ""
  static var isConfigured: Bool { !url.isEmpty && !state.isEmpty }
  static let skipReason: Comment = """
    DPD_POSTGRES_FAULT_URL or DPD_POSTGRES_FAULT_STATE is unset; run: export \
    DPD_POSTGRES_FAULT_STATE=/tmp/dpd-fault.state DPD_POSTGRES_FAULT_URL=$(DPD_POSTGRES_STATE=\
    /tmp/dpd-fault.state scripts/postgres.sh start)
    """

  /// Runs `scripts/postgres.sh command` on the fault server (`restart`, `freeze`, `thaw`).
  static func control(_ command: String) async throws {
    try await PostgresScript.run([command], state: state)
  }
}

/// The suites that restart, freeze or stream from the fault server (`PostgresOutageTests`,
/// `PostgresStandbyTests`), nested here so that they run one at a time: a restart in one would
/// otherwise end the other's connections (SQLSTATE 57P01) in the middle of its test.
@Suite(.serialized) enum FaultServerSuites {}

typealias PostgresOutageTests = FaultServerSuites.PostgresOutageTests
typealias PostgresStandbyTests = FaultServerSuites.PostgresStandbyTests

/// `scripts/postgres.sh`, which starts and controls the test servers.
enum PostgresScript {
  /// The script, found from this file's place in the repository.
  static var path: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("scripts/postgres.sh")
  }

  /// Runs `scripts/postgres.sh arguments…` on the server of the state file `state`, and expects
  /// it to succeed.
  ///
  /// Spawned and reaped with `posix_spawn` and `waitpid` rather than `Process`: `pg_ctl
  /// restart` leaves the new postmaster running, and `Process` was seen never to notice the
  /// script's exit then.
  static func run(_ arguments: [String], state: String) async throws {
    let arguments = ["/bin/bash", path.path] + arguments
    var environment = ProcessInfo.processInfo.environment
    environment["DPD_POSTGRES_STATE"] = state
    let status = try await Task.detached { () -> Int32 in
      var argv = arguments.map { strdup($0) } + [nil]
      var envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
      defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
      }
      var pid: pid_t = 0
      let spawned = posix_spawn(&pid, "/bin/bash", nil, nil, &argv, &envp)
      guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
      var status: Int32 = 0
      while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
      return status
    }.value
    #expect(
      status == 0, "scripts/postgres.sh \(arguments.dropFirst(2)) failed with status \(status)")
  }
}
