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

  /// Starts `executable` (the tool, by default) with `arguments`, on the database `url`, with
  /// `environment` added to this process's.
  init(
    _ arguments: [String], url: String = TestDatabase.url, environment: [String: String] = [:],
    executable: String = "dpd-postgres-worker"
  ) throws {
    process = Process()
    process.executableURL = WorkerProcess.productsDirectory.appendingPathComponent(executable)
    process.arguments = arguments
    process.environment = WorkerProcess.environment(url: url).merging(environment) { $1 }
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
    _ arguments: [String], url: String = TestDatabase.url, timeout: Duration = .seconds(60),
    executable: String = "dpd-postgres-worker"
  ) async throws -> ToolRun {
    let tool = try ToolProcess(arguments, url: url, executable: executable)
    let status = try await tool.waitForExit(timeout: timeout)
    return ToolRun(status: status, output: tool.output, errors: tool.errors)
  }
}

/// The tool without a server: help, and bad input.
@Suite struct PostgresWorkerToolHelpTests {
  @Test func helpNamesTheSubcommandsAndWhereTheURLAndTheNameComeFrom() async throws {
    let help = try await ToolRun.run(["--help"])
    #expect(help.status == 0, "\(help.errors)")
    for subcommand in ["state", "retry", "discard"] {
      #expect(help.output.contains(subcommand), "\(help.output)")
    }
    #expect(!help.output.contains("run  "), "the demo worker left the tool: \(help.output)")
    // Both defaults, said where the subcommands are listed (the help wraps its lines).
    let words = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    #expect(words.contains("--url, default the environment variable DPD_POSTGRES_URL"))
    #expect(words.contains("--name, default the environment variable DPD_POSTGRES_QUEUE"))
    let stateHelp = try await ToolRun.run(["state", "--help"])
    #expect(stateHelp.status == 0)
    for option in ["--name", "--log-level", "--url", "DPD_POSTGRES_QUEUE"] {
      #expect(stateHelp.output.contains(option), "\(stateHelp.output)")
    }
  }

  @Test func aMissingNameSaysHowToGiveIt() async throws {
    let run = try await ToolRun.run(["state"], url: "postgres://u@127.0.0.1:1/x")
    #expect(run.status != 0)
    #expect(run.errors.contains("--name NAME, or set DPD_POSTGRES_QUEUE"), "\(run.errors)")
  }

  @Test func aURLThatDoesNotParseSaysWhyAndIsNotEchoedWithItsPassword() async throws {
    let run = try await ToolRun.run(
      ["state", "--name", "q"], url: "postgres://u:s3cret@host:notaport/x")
    #expect(run.status != 0)
    #expect(
      run.errors.contains(
        "DPD_POSTGRES_URL is not a usable PostgreSQL URL: the port is not a number in 1...65535"),
      "\(run.errors)")
    #expect(!(run.output + run.errors).contains("s3cret"))
  }

  /// The tool says what `PostgresURL` says, not only that the URL is wrong.
  @Test func aURLWithAnUnknownSSLModeSaysWhichValue() async throws {
    let run = try await ToolRun.run(
      ["state", "--name", "q", "--url", "postgres://u:s3cret@db/x?sslmode=verify_full"])
    #expect(run.status != 0)
    #expect(run.errors.contains("--url is not a usable PostgreSQL URL"), "\(run.errors)")
    #expect(run.errors.contains("sslmode \"verify_full\" is unknown"), "\(run.errors)")
    #expect(!(run.output + run.errors).contains("s3cret"))
  }

  @Test func anUnreachableDatabaseFailsWithExitOneAndNoPassword() async throws {
    let run = try await ToolRun.run(
      ["retry", "k", "--name", "q"], url: "postgres://u:s3cret@127.0.0.1:1/x",
      timeout: .seconds(60))
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
      #expect(lines.contains("waiting: 1"), "\(state.output)")
      let waiting = try #require(lines.first { $0.hasPrefix("  waiting ") }, "\(state.output)")
      #expect(waiting.hasPrefix("  waiting  due in 59"), "\(waiting)")  // 600 s, less a little
      #expect(waiting.hasSuffix("  submissions 1  attempts 0  fence -"), "\(waiting)")
      #expect(lines.contains("running: 1"), "\(state.output)")
      let busy = try #require(lines.first { $0.hasPrefix("  busy ") }, "\(state.output)")
      #expect(busy.contains("owner \(ProcessInfo.processInfo.hostName)/\(getpid())/"), "\(busy)")
      #expect(busy.contains("attempt 1") && busy.contains("fence "), "\(busy)")
      #expect(busy.contains("lease left "), "\(busy)")
      #expect(lines.contains("failures: 2"), "\(state.output)")
      // Each kept failure with its id, as `rawFailures()` reports it.
      for failure in try await queue.rawFailures() {
        #expect(
          lines.contains(
            "  \(failure.key)  id \(failure.id)  attempts 1  last error: refused by the test"),
          "\(state.output)")
      }
      #expect(lines.contains("    value: \"b\""), "\(state.output)")
      #expect(lines.contains("    value: \"d\""), "\(state.output)")
      #expect(!state.output.contains("no bursts"))
    }
  }

  @Test func theQueueNameComesFromTheEnvironmentWhenNotGiven() async throws {
    try await Self.withQueueInEveryState { queue, _ in
      let tool = try ToolProcess(
        ["state"], environment: ["DPD_POSTGRES_QUEUE": queue.name])
      #expect(try await tool.waitForExit() == 0, "\(tool.errors)")
      #expect(
        tool.output.hasPrefix("queue \(queue.name)\npending: 2\nwaiting: 1\n"), "\(tool.output)")
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

  /// `retry --id` and `discard --id` act on one kept failure, by the id `state` lists; a key and
  /// an id together, or neither, are refused before the database is asked.
  @Test func retryAndDiscardTakeTheIdOfOneKeptFailure() async throws {
    try await Self.withQueueInEveryState { queue, runs in
      let ids = Dictionary(
        uniqueKeysWithValues: try await queue.rawFailures().map { ($0.key, $0.id) })
      let broken = try #require(ids["broken"])
      let doomed = try #require(ids["doomed"])
      let retry = try await ToolRun.run(["retry", "--id", "\(broken)", "--name", queue.name])
      #expect(retry.output == "retried id \(broken): it runs again now\n", "\(retry.errors)")
      #expect(try await TestDatabase.eventually { runs.values("broken") == ["b", "b"] })
      let discard = try await ToolRun.run(["discard", "--id", "\(doomed)", "--name", queue.name])
      #expect(discard.output == "discarded id \(doomed)\n", "\(discard.errors)")
      #expect(try await queue.rawFailures().map(\.id).contains(doomed) == false)
      let again = try await ToolRun.run(["discard", "--id", "\(doomed)", "--name", queue.name])
      #expect(again.output == "no kept failure for id \(doomed)\n", "\(again.errors)")
      for arguments in [["retry", "broken", "--id", "\(broken)"], ["discard"]] {
        let refused = try await ToolRun.run(arguments + ["--name", queue.name])
        #expect(refused.status != 0 && refused.errors.contains("Give either a key or --id"))
      }
    }
  }

  /// A service's value: a `Codable` struct, not a `String`.
  struct Edit: Codable, Sendable, Equatable {
    var document: Int
    var text: String
    var tags: [String]
  }

  /// State, retry and discard on a queue of a `Codable` struct with kept failures, one of which
  /// holds a value stored under another type that no longer decodes: every command works, and
  /// `state` shows each value as the JSON that is stored.
  @Test func everyCommandWorksOnAQueueOfACodableStructWithKeptFailures() async throws {
    try await TestDatabase.withClient { client, configuration in
      var configured = PostgresDelayedPreemptiveQueue<Edit>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("edits"),
        maxAttempts: 1)
      configured.safetyPoll = .milliseconds(200)
      let queue = configured
      try await queue.migrate()
      let edits = [
        "doc-1": Edit(document: 1, text: "Grüße, \"quoted\"", tags: ["a", "b"]),
        "doc-2": Edit(document: 2, text: "", tags: []),
      ]
      for (key, edit) in edits { try await queue.delay(key, for: .zero, value: edit) }
      // Stored by an older release whose value was a String.
      let older = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: queue.name)
      try await older.delay("legacy", for: .zero, value: "a plain string")
      try await queue.withWorker(handler: { _, _ in throw Refused() }) { () async throws in
        #expect(
          try await TestDatabase.eventually {
            try await queue.rawFailures().count == 3
          })
      }
      // The service's own call lists what decodes (P17: `failures()` leaves out the legacy
      // value); the tool shows it all the same.
      #expect(try await queue.failures().map(\.key).sorted() == ["doc-1", "doc-2"])

      let state = try await ToolRun.run(["state", "--name", queue.name])
      #expect(state.status == 0, "\(state.errors)")
      let lines = state.output.split(separator: "\n").map(String.init)
      #expect(lines.contains("failures: 3"), "\(state.output)")
      for key in ["doc-1", "doc-2", "legacy"] {
        let index = try #require(
          lines.firstIndex { $0.hasPrefix("  \(key)  id ") && $0.contains("  attempts 1  ") })
        let value = try #require(lines.dropFirst(index + 1).first)
        #expect(value.hasPrefix("    value: "), "\(state.output)")
        let json = Data(value.dropFirst("    value: ".count).utf8)
        if let edit = edits[key] {
          #expect(try JSONDecoder().decode(Edit.self, from: json) == edit, "\(value)")
        } else {
          #expect(try JSONDecoder().decode(String.self, from: json) == "a plain string")
        }
      }
      #expect(
        lines.contains(
          #"    value: {"tags": ["a", "b"], "text": "Grüße, \"quoted\"", "document": 1}"#))

      let retry = try await ToolRun.run(["retry", "legacy", "--name", queue.name])
      #expect(retry.output == "retried legacy: it runs again now\n", "\(retry.errors)")
      #expect(try await queue.isPending("legacy"))
      let discard = try await ToolRun.run(["discard", "doc-2", "--name", queue.name])
      #expect(discard.output == "discarded doc-2\n", "\(discard.errors)")
      let raw = try await queue.rawFailures()
      #expect(raw.map(\.key) == ["doc-1"])
      #expect(
        try await queue.failures() == [
          PostgresBurstFailure(
            id: try #require(raw.first).id, key: "doc-1", value: edits["doc-1"]!, attempts: 1,
            lastError: "refused by the test")
        ])
      #expect(try await queue.cancel("legacy"))
    }
  }

  /// `--json`: one object with the waiting keys and their due times, the running ones with
  /// their lease, and the kept failures with their stored values as JSON.
  @Test func stateAsJSONListsWaitingKeysWithDueTimesAndRunningOnesWithLeaseLeft() async throws {
    try await Self.withQueueInEveryState { queue, _ in
      let state = try await ToolRun.run(["state", "--name", queue.name, "--json"])
      #expect(state.status == 0, "\(state.errors)")
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(state.output.utf8)) as? [String: Any],
        "\(state.output)")
      #expect(object["queue"] as? String == queue.name)
      #expect(object["known"] as? Bool == true)
      #expect(object["pending"] as? Int == 2)
      let waiting = try #require(object["waiting"] as? [String: Any])
      #expect(waiting["count"] as? Int == 1)
      let waitingItem = try #require((waiting["items"] as? [[String: Any]])?.first)
      #expect(waitingItem["key"] as? String == "waiting")
      let dueIn = try #require(waitingItem["dueInSeconds"] as? Double)
      #expect(dueIn > 500 && dueIn <= 600, "\(dueIn)")
      let due = try #require(waitingItem["due"] as? String)
      let formatter = ISO8601DateFormatter()
      formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
      let dueDate = try #require(formatter.date(from: due), "\(due)")
      #expect(abs(dueDate.timeIntervalSinceNow - dueIn) < 60, "\(due) \(dueIn)")
      #expect(waitingItem["submissions"] as? Int == 1)
      #expect(waitingItem["attempts"] as? Int == 0)
      #expect(waitingItem["fence"] is NSNull)
      let running = try #require(object["running"] as? [String: Any])
      #expect(running["count"] as? Int == 1)
      let runningItem = try #require((running["items"] as? [[String: Any]])?.first)
      #expect(runningItem["key"] as? String == "busy")
      #expect(runningItem["attempt"] as? Int == 1)
      #expect((runningItem["fence"] as? Int ?? 0) > 0)
      #expect((runningItem["leaseLeftSeconds"] as? Double ?? 0) > 0, "\(runningItem)")
      let failures = try #require(object["failures"] as? [String: Any])
      #expect(failures["count"] as? Int == 2)
      let failureItems = try #require(failures["items"] as? [[String: Any]])
      #expect(Set(failureItems.compactMap { $0["value"] as? String }) == ["b", "d"])
      #expect(failureItems.allSatisfy { $0["lastError"] as? String == "refused by the test" })
      #expect(object["absent"] == nil)
    }
  }

  /// `--key-prefix` and `--key` choose the keys; `--limit` cuts each list and says how many
  /// more there are; `--key` of a key with nothing exits 2.
  @Test func stateChoosesKeysByPrefixOrNameAndLimitsEachList() async throws {
    try await Self.withQueueInEveryState { queue, _ in
      // "busy" runs and "broken" is kept; "waiting" and "doomed" do not begin with "b".
      let prefixed = try await ToolRun.run(["state", "--name", queue.name, "--key-prefix", "b"])
      #expect(prefixed.status == 0, "\(prefixed.errors)")
      let lines = prefixed.output.split(separator: "\n").map(String.init)
      #expect(lines.contains("keys beginning with b"), "\(prefixed.output)")
      #expect(lines.contains("pending: 1") && lines.contains("waiting: 0"), "\(prefixed.output)")
      #expect(lines.contains { $0.hasPrefix("  busy  owner ") }, "\(prefixed.output)")
      #expect(lines.contains("failures: 1"), "\(prefixed.output)")
      #expect(lines.contains { $0.hasPrefix("  broken  id ") }, "\(prefixed.output)")
      #expect(!prefixed.output.contains("doomed") && !prefixed.output.contains("  waiting "))

      let limited = try await ToolRun.run(["state", "--name", queue.name, "--limit", "1"])
      #expect(limited.status == 0, "\(limited.errors)")
      let limitedLines = limited.output.split(separator: "\n").map(String.init)
      #expect(limitedLines.contains("failures: 2"), "\(limited.output)")
      #expect(limitedLines.filter { $0.hasPrefix("    value: ") }.count == 1, "\(limited.output)")
      #expect(limitedLines.contains("  … 1 more (--limit)"), "\(limited.output)")

      let one = try await ToolRun.run(["state", "--name", queue.name, "--key", "waiting"])
      #expect(one.status == 0, "\(one.errors)")
      #expect(one.output.contains("\nkey waiting\npending: 1\nwaiting: 1\n"), "\(one.output)")

      let none = try await ToolRun.run(["state", "--name", queue.name, "--key", "nosuch"])
      #expect(none.status == 2, "\(none.output) \(none.errors)")
      #expect(
        none.output.hasSuffix("no burst and no kept failure for the key nosuch\n"),
        "\(none.output)")

      let bad = try await ToolRun.run(["state", "--name", queue.name, "--limit", "0"])
      #expect(bad.status != 0 && bad.errors.contains("--limit must be at least 1"), "\(bad.errors)")
    }
  }

  @Test func stateOfANameWithNoBurstsSaysSoAndNamesTheQueuesInUse() async throws {
    try await TestDatabase.withFreshDatabase { url in
      try await TestDatabase.withClient(url: url) { client, configuration in
        let used = PostgresDelayedPreemptiveQueue<String>(
          client: client, configuration: configuration, name: "reindex")
        try await used.migrate()
        let empty = try await ToolRun.run(["state", "--name", "reindex"], url: url)
        #expect(empty.status == 0, "\(empty.errors)")
        #expect(
          empty.output.hasSuffix("no bursts under the name reindex: the queue is idle\n"),
          "\(empty.output) \(empty.errors)")
        try await used.delay("k", for: .seconds(600), value: "v")
        try await used.delay("l", for: .seconds(600), value: "w")
        let state = try await ToolRun.run(["state", "--name", "reindx"], url: url)
        #expect(state.status == 2, "\(state.errors)")
        #expect(
          state.output
            == "queue reindx\npending: 0\nwaiting: 0\nrunning: 0\nfailures: 0\nno queue named "
            + "reindx in this database (no migrate() of that name ran here); names with bursts "
            + "in this database: reindex (2)\n")
        let json = try await ToolRun.run(["state", "--name", "reindx", "--json"], url: url)
        #expect(json.status == 2, "\(json.errors)")
        let object = try #require(
          try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(object["known"] as? Bool == false, "\(json.output)")
        #expect((object["absent"] as? String)?.hasPrefix("no queue named reindx") == true)
      }
    }
  }

  @Test func stateOfADatabaseWhereNoQueueWasEverMigratedSaysSo() async throws {
    try await TestDatabase.withFreshDatabase { url in
      let state = try await ToolRun.run(["state", "--name", "reindex"], url: url)
      #expect(state.status == 2, "\(state.errors)")
      #expect(
        state.output
          == "queue reindex\nno queue was ever used in this database: it has no dpd_bursts "
          + "table (no migrate() has run there); is --url the service's database?\n")
    }
  }
}
