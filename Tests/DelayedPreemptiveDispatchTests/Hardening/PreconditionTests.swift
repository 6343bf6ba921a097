import Foundation
import Testing

/// Programmer errors stop the process with a message that names the parameter. A trap cannot be
/// caught in-process, so each case runs `dpd-precondition-probe` and reads its exit and stderr.
@Suite struct PreconditionTests {
  struct ProbeResult {
    var status: Int32
    var reason: Process.TerminationReason
    var stderr: String
  }

  /// The folder that holds the built products, test bundle and executables alike.
  static var productsDirectory: URL {
    #if canImport(Darwin)
      if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
        return bundle.bundleURL.deletingLastPathComponent()
      }
    #endif
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  }

  static func runProbe(_ name: String) throws -> ProbeResult {
    let process = Process()
    process.executableURL = productsDirectory.appendingPathComponent("dpd-precondition-probe")
    process.arguments = [name]
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"  // the message is what matters, and is quicker
    process.environment = environment
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let data = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProbeResult(
      status: process.terminationStatus, reason: process.terminationReason,
      stderr: String(decoding: data, as: UTF8.self))
  }

  @Test(arguments: [
    ("delay-nan", "delay(_:task:): seconds must be a finite number of seconds, got nan"),
    ("delay-infinity", "delay(_:task:): seconds must be a finite number of seconds, got inf"),
    ("lockout-max-failures", "PasscodeLockout: maxFailures must be at least 1, got 0"),
    ("lockout-window", "PasscodeLockout: window must be positive, got 0.0 seconds"),
    ("lockout-duration", "PasscodeLockout: lockoutDuration must be positive, got -1.0 seconds"),
    ("lockout-escalation-empty", "PasscodeLockout: lockoutDurations must not be empty"),
  ])
  func programmerErrorStopsWithMessageNamingParameter(probe: String, message: String) throws {
    let result = try Self.runProbe(probe)
    #expect(result.reason == .uncaughtSignal)
    #expect(result.stderr.contains("Precondition failed: \(message)"), "stderr: \(result.stderr)")
  }

  @Test func unknownProbeExitsCleanlySoTheHarnessCanFail() throws {
    let result = try Self.runProbe("no-such-probe")
    #expect(result.reason == .exit)
    #expect(result.status == 2)
  }
}
