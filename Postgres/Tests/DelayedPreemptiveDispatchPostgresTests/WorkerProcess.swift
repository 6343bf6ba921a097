import Dispatch
import Foundation
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A `dpd-postgres-test-worker` process: a replica under test, or a probe of a precondition.
final class WorkerProcess: Sendable {
  static var productsDirectory: URL {
    #if canImport(Darwin)
      if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
        return bundle.bundleURL.deletingLastPathComponent()
      }
    #endif
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  }

  /// This process's environment, with the database `url` and without crash backtraces.
  static func environment(url: String) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["DPD_POSTGRES_URL"] = url
    environment["SWIFT_BACKTRACE"] = "enable=no"
    return environment
  }

  let process: Process
  let output: Pipe
  let errors: Pipe

  /// The file the worker's standard error goes to, when one was given instead of the pipe.
  let errorFile: URL?

  /// Starts the worker with `arguments`, talking to the test database. With `errorFile`, its
  /// standard error goes to that file, so that a worker that logs much never blocks on a full
  /// pipe.
  /// `environment` adds to (or replaces in) this process's environment: a preloaded library, for
  /// example.
  init(
    _ arguments: [String], url: String = TestDatabase.url, errorFile: URL? = nil,
    environment: [String: String] = [:]
  ) throws {
    process = Process()
    process.executableURL = Self.productsDirectory.appendingPathComponent(
      "dpd-postgres-test-worker")
    process.arguments = arguments
    process.environment = Self.environment(url: url).merging(environment) { $1 }
    output = Pipe()
    errors = Pipe()
    process.standardOutput = output
    self.errorFile = errorFile
    if let errorFile {
      _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
      process.standardError = try FileHandle(forWritingTo: errorFile)
    } else {
      process.standardError = errors
    }
    try process.run()
  }

  /// Waits until the worker printed "ready" (it has migrated and runs), or fails the test.
  ///
  /// The pipe is read on a thread of Dispatch's, never on the cooperative pool, whose two
  /// threads a blocking read would take from every other test.
  func waitUntilReady(timeout: Duration = .seconds(60)) async {
    let handle = output.fileHandleForReading
    let ready = Locked<CheckedContinuation<Bool, Never>?>(nil)
    let answer: @Sendable (Bool) -> Void = { value in
      ready.withLock { continuation in
        continuation?.resume(returning: value)
        continuation = nil
      }
    }
    let seen = await withCheckedContinuation { continuation in
      ready.withLock { $0 = continuation }
      DispatchQueue.global().async {
        var seen = Data()
        while true {
          let chunk = handle.availableData
          if chunk.isEmpty { return answer(false) }
          seen.append(chunk)
          if String(decoding: seen, as: UTF8.self).contains("ready\n") { return answer(true) }
        }
      }
      DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { answer(false) }
    }
    if !seen {
      signal(SIGKILL)
      Issue.record("dpd-postgres-test-worker did not become ready: \(errorText())")
    }
  }

  func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// Waits for the process to end; returns its termination status and reason.
  func waitForExit(timeout: Duration = .seconds(30)) async throws
    -> (status: Int32, reason: Process.TerminationReason)?
  {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    guard !process.isRunning else { return nil }
    return (process.terminationStatus, process.terminationReason)
  }

  func errorText() -> String {
    if process.isRunning { return "(still running)" }
    if let errorFile {
      return (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
    }
    return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}

extension Duration {
  /// The duration in seconds, for Dispatch.
  fileprivate var seconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }
}
