import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A `dpd-postgres-worker` process. Its output goes to files, not pipes: reading a pipe blocks a
/// thread of the cooperative pool until the tool exits, and this machine has two of them.
final class ToolProcess: Sendable {
  let process: Process
  let outputFile: URL
  let errorFile: URL

  /// Starts the tool with `arguments`, on the database `url`.
  init(_ arguments: [String], url: String = TestDatabase.url) throws {
    process = Process()
    process.executableURL = WorkerProcess.productsDirectory.appendingPathComponent(
      "dpd-postgres-worker")
    process.arguments = arguments
    process.environment = WorkerProcess.environment(url: url)
    let directory = FileManager.default.temporaryDirectory
    outputFile = directory.appendingPathComponent("dpd-tool-\(UUID().uuidString).out")
    errorFile = directory.appendingPathComponent("dpd-tool-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    let output = try FileHandle(forWritingTo: outputFile)
    let errors = try FileHandle(forWritingTo: errorFile)
    defer {
      try? output.close()
      try? errors.close()
    }
    process.standardOutput = output
    process.standardError = errors
    try process.run()
  }

  /// What it printed on stdout so far.
  var output: String { (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "" }
  /// What it printed on stderr so far.
  var errors: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }

  func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// Waits for the process to end; returns its exit status, or nil if it ran past `timeout`
  /// (then it is killed).
  func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32? {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    guard !process.isRunning else {
      signal(SIGKILL)
      return nil
    }
    return process.terminationReason == .exit ? process.terminationStatus : -1
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    try? FileManager.default.removeItem(at: outputFile)
    try? FileManager.default.removeItem(at: errorFile)
  }
}

/// One run of the tool to its end: its exit status (nil: killed after the timeout) and what it
/// printed.
struct ToolRun: Sendable {
  var status: Int32?
  var output: String
  var errors: String

  static func run(
    _ arguments: [String], url: String = TestDatabase.url, timeout: Duration = .seconds(60)
  ) async throws -> ToolRun {
    let tool = try ToolProcess(arguments, url: url)
    let status = try await tool.waitForExit(timeout: timeout)
    return ToolRun(status: status, output: tool.output, errors: tool.errors)
  }
}

/// The tool without a server: help, and bad input.
@Suite struct PostgresWorkerToolHelpTests {
  @Test func helpExitsZeroAndNamesTheSubcommands() async throws {
    let help = try await ToolRun.run(["--help"])
    #expect(help.status == 0, "\(help.errors)")
    for subcommand in ["run", "state", "retry", "discard"] {
      #expect(help.output.contains(subcommand), "\(help.output)")
    }
    let runHelp = try await ToolRun.run(["run", "--help"])
    #expect(runHelp.status == 0)
    for option in ["--name", "--concurrency", "--lease-seconds", "--log-level", "--url"] {
      #expect(runHelp.output.contains(option), "\(runHelp.output)")
    }
  }

  @Test func aURLThatDoesNotParseIsNotEchoedWithItsPassword() async throws {
    let run = try await ToolRun.run(["state"], url: "postgres://u:s3cret@host:notaport/x")
    #expect(run.status != 0)
    #expect(run.errors.contains("DPD_POSTGRES_URL is not a PostgreSQL URL"), "\(run.errors)")
    #expect(!(run.output + run.errors).contains("s3cret"))
  }

  @Test func anUnreachableDatabaseFailsWithExitOneAndNoPassword() async throws {
    let run = try await ToolRun.run(
      ["retry", "k"], url: "postgres://u:s3cret@127.0.0.1:1/x", timeout: .seconds(60))
    #expect(run.status == 1, "\(run.output) \(run.errors)")
    #expect(run.errors.contains("127.0.0.1:1"), "\(run.errors)")
    #expect(!(run.output + run.errors).contains("s3cret"))
  }
}

/// The tool's state, retry and discard commands against the real server.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresWorkerToolTests {
  struct Refused: Error, CustomStringConvertible {
    var description: String { "refused by the test" }
  }

  /// A queue holding a waiting burst (`waiting`), a running one (`busy`, held until the body
  /// returns) and two kept failures (`broken`, `doomed`); `runs` lists the handler's runs.
  static func withQueueInEveryState(
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>, RunList) async throws -> Void
  ) async throws {
    try await TestDatabase.withQueue("tool", maxAttempts: 1, retryBackoff: .milliseconds(10)) {
      queue, _ in
      let release = Latch()
      let runs = RunList()
      defer { release.open() }
      try await queue.delay("waiting", for: .seconds(600), value: "later")
      try await queue.delay("broken", for: .zero, value: "b")
      try await queue.delay("doomed", for: .zero, value: "d")
      try await queue.withWorker(
        handler: { key, value in
          runs.append(key, value)
          guard key == "busy" else { throw Refused() }
          try await release.wait()
        }
      ) {
        #expect(try await TestDatabase.eventually { try await queue.failures().count == 2 })
        try await queue.delay("busy", for: .zero, value: "x")
        #expect(
          try await TestDatabase.eventually { try await queue.runningBursts().count == 1 })
        try await body(queue, runs)
        release.open()
      }
    }
  }

  @Test func stateListsPendingRunningAndKeptFailures() async throws {
    try await Self.withQueueInEveryState { queue, runs in
      let state = try await ToolRun.run(["state", "--name", queue.name])
      #expect(state.status == 0, "\(state.errors)")
      let lines = state.output.split(separator: "\n").map(String.init)
      #expect(lines.contains("pending: 2"), "\(state.output)")  // waiting and busy
      #expect(lines.contains("running: 1"), "\(state.output)")
      let busy = try #require(lines.first { $0.hasPrefix("  busy ") }, "\(state.output)")
      #expect(busy.contains("owner \(ProcessInfo.processInfo.hostName)/\(getpid())/"), "\(busy)")
      #expect(busy.contains("attempt 1") && busy.contains("fence "), "\(busy)")
      #expect(busy.contains("lease left "), "\(busy)")
      #expect(lines.contains("failures: 2"), "\(state.output)")
      #expect(lines.contains("  broken  attempts 1  last error: refused by the test"))
      #expect(lines.contains("  doomed  attempts 1  last error: refused by the test"))
    }
  }

  @Test func retryAndDiscardActOnKeptFailures() async throws {
    try await Self.withQueueInEveryState { queue, runs in
      let retry = try await ToolRun.run(["retry", "broken", "--name", queue.name])
      #expect(retry.status == 0, "\(retry.errors)")
      #expect(retry.output == "retried broken: it runs again now\n")
      // The worker runs it again with its kept value (and, as it still throws, keeps it again).
      #expect(try await TestDatabase.eventually { runs.values("broken") == ["b", "b"] })

      let discard = try await ToolRun.run(["discard", "doomed", "--name", queue.name])
      #expect(discard.status == 0, "\(discard.errors)")
      #expect(discard.output == "discarded doomed\n")
      #expect(try await queue.failures().map(\.key).contains("doomed") == false)
      #expect(try await queue.isPending("doomed") == false)

      for (command, key) in [("retry", "doomed"), ("discard", "doomed"), ("retry", "waiting")] {
        let again = try await ToolRun.run([command, key, "--name", queue.name])
        #expect(again.status == 0, "\(again.errors)")
        #expect(again.output == "no kept failure for \(key)\n")
      }
      #expect(try await queue.isPending("waiting"))
    }
  }

  @Test func runWorksUntilSIGTERMThenStopsAndExitsZero() async throws {
    try await TestDatabase.withQueue("tool-run") { queue, _ in
      let tool = try ToolProcess(
        ["run", "--name", queue.name, "--concurrency", "2", "--log-level", "debug"])
      #expect(try await TestDatabase.eventually(within: .seconds(60)) { tool.output == "ready\n" })
      try await queue.delay("k", for: .zero, value: "hello")
      #expect(
        try await TestDatabase.eventually {
          tool.output.contains("ran k = hello (attempt 1, fence ")
        }, "\(tool.output) \(tool.errors)")
      #expect(try await queue.drains(within: .seconds(10)))
      tool.signal(SIGTERM)
      #expect(try await tool.waitForExit() == 0, "\(tool.errors)")
      #expect(tool.output.hasSuffix("stopped\n"), "\(tool.output)")
      #expect(tool.errors.contains("worker started"), "\(tool.errors)")
      #expect(tool.errors.contains("worker stopped"), "\(tool.errors)")
    }
  }
}
