import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Programmer errors stop the process with a message that names the parameter. A trap cannot be
/// caught in-process, so each case runs `dpd-precondition-probe` and reads its exit and stderr.
@Suite struct PreconditionTests {
  struct ProbeResult {
    /// The signal that stopped the probe, or nil if it exited.
    var signal: Int32?
    var exitStatus: Int32?
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

  /// Runs the probe (``spawnAndRead(_:arguments:environment:descriptor:)``) and collects its
  /// stderr and how it ended.
  static func runProbe(_ name: String) throws -> ProbeResult {
    let path = productsDirectory.appendingPathComponent("dpd-precondition-probe").path
    // The message is what matters; skipping the backtracer keeps each probe quick.
    let (output, status) = try spawnAndRead(
      path, arguments: [name], environment: ["SWIFT_BACKTRACE=enable=no"], descriptor: 2)
    let signal = status & 0x7f
    return ProbeResult(
      signal: signal != 0 ? signal : nil, exitStatus: signal == 0 ? (status >> 8) & 0xff : nil,
      stderr: output)
  }

  @Test(arguments: [
    ("delay-nan", "delay(_:task:): seconds must be a finite number of seconds, got nan"),
    ("delay-infinity", "delay(_:task:): seconds must be a finite number of seconds, got inf"),
    ("lockout-max-failures", "PasscodeLockout: maxFailures must be at least 1, got 0"),
    (
      "options-minimum-spacing",
      "DelayOptions: minimumSpacing must not be negative (zero or nil for none), got -1.0 seconds"
    ),
    (
      "throttle-negative",
      "DelayOptions: minimumSpacing must not be negative (zero or nil for none), got -0.005 seconds"
    ),
    (
      "keyed-actor-minimum-spacing",
      "DelayOptions: minimumSpacing must not be negative (zero or nil for none), got -2.0 seconds"
    ),
    (
      "options-max-submissions",
      "DelayOptions: maxSubmissions must be at least 1 (or nil for no bound), got 0"
    ),
    (
      "queue-max-submissions",
      "DelayOptions: maxSubmissions must be at least 1 (or nil for no bound), got -2"
    ),
    ("lockout-window", "PasscodeLockout: window must be positive, got 0.0 seconds"),
    ("lockout-duration", "PasscodeLockout: lockoutDuration must be positive, got -1.0 seconds"),
    ("lockout-escalation-empty", "PasscodeLockout: lockoutDurations must not be empty"),
    (
      "keyed-queue-max-concurrent",
      "KeyedDelayedPreemptiveDispatchQueue: maxConcurrentTasks must be at least 1, got 0"
    ),
    (
      "keyed-actor-max-concurrent",
      "KeyedDelayedPreemptiveActor: maxConcurrentTasks must be at least 1, got -1"
    ),
    ("keyed-wait-inside-task", "wait(timeout:) was called from a task of the same keyed queue"),
    ("wait-inside-task", "wait(timeout:) was called from a task of the same queue"),
    ("wait-main-target-on-main", "wait(timeout:) was called on the main queue for a queue whose"),
  ])
  func programmerErrorStopsWithMessageNamingParameter(probe: String, message: String) throws {
    let result = try Self.runProbe(probe)
    #expect(result.signal != nil, "the probe exited with \(String(describing: result.exitStatus))")
    #expect(result.stderr.contains("Precondition failed: \(message)"), "stderr: \(result.stderr)")
  }

  @Test func unknownProbeExitsCleanlySoTheHarnessCanFail() throws {
    let result = try Self.runProbe("no-such-probe")
    #expect(result.signal == nil)
    #expect(result.exitStatus == 2)
  }
}
