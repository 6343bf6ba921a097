import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// One run of the shipped `dpd-postgres-worker` tool: its exit status and what it printed.
struct ToolRun: Sendable {
  var status: Int32
  var output: String
  var errors: String

  /// Runs the tool with `arguments` until it exits (at most `timeout`; then it is killed and the
  /// status is -1).
  static func run(
    _ arguments: [String], url: String = TestDatabase.url, timeout: Duration = .seconds(60)
  ) async throws -> ToolRun {
    let process = Process()
    process.executableURL = WorkerProcess.productsDirectory.appendingPathComponent(
      "dpd-postgres-worker")
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["DPD_POSTGRES_URL"] = url
    environment["SWIFT_BACKTRACE"] = "enable=no"
    process.environment = environment
    // Files, not pipes: reading a pipe blocks a thread of the cooperative pool until the tool
    // exits, and this machine has two of them.
    let directory = FileManager.default.temporaryDirectory
    let outputFile = directory.appendingPathComponent("dpd-tool-\(UUID().uuidString).out")
    let errorFile = directory.appendingPathComponent("dpd-tool-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    defer {
      try? FileManager.default.removeItem(at: outputFile)
      try? FileManager.default.removeItem(at: errorFile)
    }
    let output = try FileHandle(forWritingTo: outputFile)
    let errors = try FileHandle(forWritingTo: errorFile)
    defer {
      try? output.close()
      try? errors.close()
    }
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    let timedOut = process.isRunning
    if timedOut { kill(process.processIdentifier, SIGKILL) }
    while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
    return ToolRun(
      status: timedOut ? -1 : process.terminationStatus,
      output: String(decoding: try Data(contentsOf: outputFile), as: UTF8.self),
      errors: String(decoding: try Data(contentsOf: errorFile), as: UTF8.self))
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
}
