import Foundation

/// A program run to its end, for the tests that need one (openssl, psql): its exit status and
/// what it printed. Its output goes to files, and its end is polled, so that no thread of the
/// cooperative pool blocks on it.
struct Command: Sendable {
  var status: Int32
  var output: String
  var errors: String

  /// Runs `executable` (a path, or a name found on `PATH`) with `arguments`; `environment`
  /// replaces this process's environment when given. A run past `timeout` is killed, and its
  /// status is -1.
  static func run(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    timeout: Duration = .seconds(60)
  ) async throws -> Command {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    if let environment { process.environment = environment }
    let directory = FileManager.default.temporaryDirectory
    let outputFile = directory.appendingPathComponent("dpd-command-\(UUID().uuidString).out")
    let errorFile = directory.appendingPathComponent("dpd-command-\(UUID().uuidString).err")
    defer {
      try? FileManager.default.removeItem(at: outputFile)
      try? FileManager.default.removeItem(at: errorFile)
    }
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    let output = try FileHandle(forWritingTo: outputFile)
    let errors = try FileHandle(forWritingTo: errorFile)
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    try? output.close()
    try? errors.close()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    let timedOut = process.isRunning
    if timedOut { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return Command(
      status: timedOut ? -1 : process.terminationStatus,
      output: (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "",
      errors: (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "")
  }
}
