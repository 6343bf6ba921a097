// dpd-postgres-worker: the operator's tool for a PostgresDelayedPreemptiveQueue<String>. `run` (the
// default) runs a demo worker as a service until SIGTERM or SIGINT; `state` shows what is pending,
// running and failed; `retry KEY` and `discard KEY` act on a kept failure. `--help` says more.
//
//   export DPD_POSTGRES_URL=$(scripts/postgres.sh start)
//   swift run --package-path Postgres dpd-postgres-worker --help
import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO

/// The root command: its subcommands do the work, `run` when none is named.
@main
struct WorkerTool: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "dpd-postgres-worker",
    abstract: "Runs and operates a PostgresDelayedPreemptiveQueue<String>.",
    discussion: """
      The database comes from --url or the environment variable DPD_POSTGRES_URL \
      (postgres://user[:password]@host[:port]/database[?sslmode=require]); \
      scripts/postgres.sh start prints one. No output ever shows the password.
      """,
    subcommands: [RunCommand.self, StateCommand.self, RetryCommand.self, DiscardCommand.self],
    defaultSubcommand: RunCommand.self)
}

/// The options every subcommand takes: where the queue is, and how much to log.
struct QueueOptions: ParsableArguments {
  @Option(
    help: ArgumentHelp(
      "The database's URL (default: $DPD_POSTGRES_URL).", valueName: "postgres-url"))
  var url: String?

  @Option(help: "The queue's name: its rows in dpd_bursts.")
  var name = "demo"

  @Option(help: "The least severe log level written to stderr.")
  var logLevel: LogLevel = .info

  func validate() throws {
    guard !name.isEmpty, !name.unicodeScalars.contains("\0"),
      name.utf8.count <= PostgresDelayedPreemptiveQueue<String>.maximumNameBytes
    else {
      throw ValidationError(
        "--name must be 1 to \(PostgresDelayedPreemptiveQueue<String>.maximumNameBytes) bytes "
          + "of UTF-8, without a NUL character")
    }
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
    } catch {
      throw ValidationError(
        "\(source) is not a PostgreSQL URL: expected "
          + "postgres://user[:password]@host[:port]/database[?sslmode=require]")
    }
  }

  /// A logger that writes to stderr at `--log-level`.
  func logger() -> Logger {
    var logger = Logger(label: "dpd-postgres-worker") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = logLevel.level
    return logger
  }

  /// Runs `body` with the queue on a running client; stops the client afterwards. An error of
  /// the queue is written to stderr and ends the tool with exit code 1.
  func withQueue<Result: Sendable>(
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>) async throws -> Result
  ) async throws -> Result {
    let configuration = try configuration()
    let logger = logger()
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    let running = Task { await client.run() }
    defer { running.cancel() }
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: name, logger: logger)
    do {
      return try await body(queue)
    } catch {
      printError("dpd-postgres-worker: \(error)")
      throw ExitCode.failure
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
