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

  /// `scripts/postgres.sh`, found from this file's place in the repository.
  static var script: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("scripts/postgres.sh")
  }

  /// Runs `scripts/postgres.sh command` on the fault server (`restart`, `freeze`, `thaw`).
  static func control(_ command: String) async throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [script.path, command]
    var environment = ProcessInfo.processInfo.environment
    environment["DPD_POSTGRES_STATE"] = state
    process.environment = environment
    try process.run()
    while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
    #expect(process.terminationStatus == 0, "scripts/postgres.sh \(command) failed")
  }
}
