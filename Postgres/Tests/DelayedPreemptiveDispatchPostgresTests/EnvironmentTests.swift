import Foundation
import Testing

/// The Postgres tests may skip only on a developer machine: under CI (`CI` set, as `.ci/run` is
/// run), a missing `DPD_POSTGRES_URL` fails here instead of letting every other suite skip.
@Suite struct PostgresEnvironmentTests {
  @Test func serverIsConfiguredWheneverCIRuns() {
    let ci = ProcessInfo.processInfo.environment["CI"] ?? ""
    guard !ci.isEmpty, ci != "false" else { return }
    #expect(
      TestDatabase.isConfigured,
      "CI is set but DPD_POSTGRES_URL is not: start the server with scripts/postgres.sh start")
  }

  @Test func faultServerIsConfiguredWheneverCIRuns() {
    let ci = ProcessInfo.processInfo.environment["CI"] ?? ""
    guard !ci.isEmpty, ci != "false" else { return }
    #expect(
      FaultServer.isConfigured, "CI is set but the fault server is not: \(FaultServer.skipReason)")
  }

  @Test func tlsServerIsConfiguredWheneverCIRuns() {
    let ci = ProcessInfo.processInfo.environment["CI"] ?? ""
    guard !ci.isEmpty, ci != "false" else { return }
    #expect(
      TLSServer.isConfigured, "CI is set but the TLS server is not: \(TLSServer.skipReason)")
  }
}
