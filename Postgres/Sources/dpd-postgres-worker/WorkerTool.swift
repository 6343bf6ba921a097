// dpd-postgres-worker: the operator's tool for a PostgresDelayedPreemptiveQueue of any Value type.
// `state` shows what is pending, running and failed, with each kept value as its stored JSON;
// `retry KEY` and `discard KEY` act on a key's kept failures, `--id N` on one. `--help` says more.
//
//   export DPD_POSTGRES_URL=$(scripts/postgres.sh start)
//   swift run --package-path Postgres dpd-postgres-worker state --name reindex
import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO

/// The root command: its subcommands do the work.
@main
struct WorkerTool: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "dpd-postgres-worker",
    abstract:
      "Shows and acts on the bursts of a PostgresDelayedPreemptiveQueue, whatever its Value.",
    discussion: """
      The database comes from --url, default the environment variable DPD_POSTGRES_URL \
      (postgres://user[:password]@host[:port]/database[?sslmode=verify-full]); \
      scripts/postgres.sh start prints one. The queue comes from --name, default the \
      environment variable DPD_POSTGRES_QUEUE: the name the service gives its queue; one of \
      the two is required. Values are shown as the JSON the database stores, whatever the \
      service's Value type, so no command fails on a value it cannot decode. No output ever \
      shows the password.
      """,
    subcommands: [StateCommand.self, RetryCommand.self, DiscardCommand.self])
}

/// The options every subcommand takes: where the queue is, and how much to log.
struct QueueOptions: ParsableArguments {
  @Option(
    help: ArgumentHelp(
      "The database's URL (default: $DPD_POSTGRES_URL).", valueName: "postgres-url"))
  var url: String?

  @Option(
    help: ArgumentHelp(
      "The queue's name, as the service gives it (default: $DPD_POSTGRES_QUEUE; one of the two "
        + "is required).", valueName: "queue-name"))
  var name: String?

  @Option(help: "The least severe log level written to stderr.")
  var logLevel: LogLevel = .warning

  /// The queue's name, from `--name` or `DPD_POSTGRES_QUEUE`.
  var queueName: String {
    get throws {
      let environment = ProcessInfo.processInfo.environment["DPD_POSTGRES_QUEUE"] ?? ""
      guard let name = name ?? (environment.isEmpty ? nil : environment) else {
        throw ValidationError(
          "give the queue's name, as the service gives it: --name NAME, or set "
            + "DPD_POSTGRES_QUEUE")
      }
      let maximum = PostgresDelayedPreemptiveQueue<String>.maximumNameBytes
      guard !name.isEmpty, !name.unicodeScalars.contains("\0"), name.utf8.count <= maximum else {
        throw ValidationError(
          "the queue's name must be 1 to \(maximum) bytes of UTF-8, without a NUL character")
      }
      return name
    }
  }

  func validate() throws {
    _ = try queueName
  }

  /// The client configuration from `--url` or `DPD_POSTGRES_URL`. The errors never repeat the
  /// URL, which may hold a password.
  func configuration() throws -> PostgresClient.Configuration {
    let environment = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"] ?? ""
    let source = url == nil ? "DPD_POSTGRES_URL" : "--url"
    guard let url = url ?? (environment.isEmpty ? nil : environment) else {
      throw ValidationError(
        "set DPD_POSTGRES_URL or pass --url (scripts/postgres.sh start prints a URL)")
    }
    do {
      return try PostgresURL.configuration(url)
    } catch let error as PostgresURL.InvalidURL {
      // The reason never quotes the password (PostgresURL redacts it).
      throw ValidationError(
        "\(source) is not a usable PostgreSQL URL: \(error.reason) (expected "
          + "postgres://user[:password]@host[:port]/database[?sslmode=verify-full])")
    }
  }

  /// A logger that writes to stderr at `--log-level`.
  func logger() -> Logger {
    var logger = Logger(label: "dpd-postgres-worker") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = logLevel.level
    return logger
  }

  /// Runs `body` with the queue on a running client, and stops the client afterwards. An error
  /// of the queue is written to stderr and ends the tool with exit code 1.
  ///
  /// The queue's `Value` type is `String`, and no command decodes a value: each works on a
  /// queue of any `Value` type.
  func withQueue<Result: Sendable>(
    _ body: @escaping @Sendable (PostgresDelayedPreemptiveQueue<String>) async throws -> Result
  ) async throws -> Result {
    let configuration = try configuration()
    let logger = logger()
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: try queueName, logger: logger)
    // The client runs in the group of this task, before the first call leases a connection.
    return try await withThrowingTaskGroup(of: Result?.self) { group in
      group.addTask {
        await client.run()
        return nil
      }
      group.addTask {
        do {
          try await queue.waitForRunningClient()
          return try await body(queue)
        } catch {
          printError("dpd-postgres-worker: \(error)")
          throw ExitCode.failure
        }
      }
      defer { group.cancelAll() }
      while let result = try await group.next() {
        if let result { return result }
      }
      throw CancellationError()
    }
  }
}

/// swift-log's levels, as `--log-level` takes them.
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
  case trace, debug, info, notice, warning, error, critical

  var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}

/// Writes a line to stdout at once (not buffered: a supervisor or a test reads it live).
func printLine(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes a line to stderr.
func printError(_ line: String) {
  FileHandle.standardError.write(Data((line + "\n").utf8))
}
