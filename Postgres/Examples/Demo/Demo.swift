// dpd-postgres-demo: a demo of PostgresDelayedPreemptiveQueue<String>, and no product: it ships
// with nothing. `worker` (the default) runs a worker that prints each run, in a ServiceGroup with
// its client, as a service would; `submit KEY VALUE` submits a burst to it.
//
//   export DPD_POSTGRES_URL=$(scripts/postgres.sh start)
//   swift run --package-path Postgres dpd-postgres-demo worker          # one terminal
//   swift run --package-path Postgres dpd-postgres-demo submit k hello  # another
import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

@main
struct Demo: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "dpd-postgres-demo",
    abstract: "A demo worker of a PostgresDelayedPreemptiveQueue<String>, and submissions to it.",
    discussion: """
      The database comes from the environment variable DPD_POSTGRES_URL (scripts/postgres.sh \
      start prints one), the queue from --name (default: demo). Inspect it with \
      dpd-postgres-worker state --name demo.
      """,
    subcommands: [WorkerCommand.self, SubmitCommand.self],
    defaultSubcommand: WorkerCommand.self)
}

/// Where the demo's queue is.
struct DemoOptions: ParsableArguments {
  @Option(help: "The queue's name.")
  var name = "demo"

  @Option(help: "The least severe log level written to stderr.")
  var logLevel = "info"

  func configuration() throws -> PostgresClient.Configuration {
    let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"] ?? ""
    guard !url.isEmpty else {
      throw ValidationError("set DPD_POSTGRES_URL (scripts/postgres.sh start prints a URL)")
    }
    do {
      return try PostgresURL.configuration(url)
    } catch let error as PostgresURL.InvalidURL {
      throw ValidationError("DPD_POSTGRES_URL is not a usable PostgreSQL URL: \(error.reason)")
    }
  }

  func logger() -> Logger {
    var logger = Logger(label: "dpd-postgres-demo") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
    return logger
  }
}

/// `worker`: the service a demo would be, until SIGTERM or SIGINT.
struct WorkerCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "worker",
    abstract: "Runs the demo worker until SIGTERM or SIGINT (the default subcommand).",
    discussion: """
      Prints each run as "ran KEY = VALUE (attempt N, fence F)". A value "fail" makes the \
      handler throw, so that the burst is retried with backoff and, after 5 runs, kept as a \
      failure (see dpd-postgres-worker state, retry, discard). On SIGTERM or SIGINT the worker \
      claims nothing more, lets running handlers finish, prints "stopped" and exits 0.
      """)

  @OptionGroup var options: DemoOptions

  @Option(help: "How many handlers run at once, at most.")
  var concurrency = 4

  func validate() throws {
    guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
  }

  func run() async throws {
    let configuration = try options.configuration()
    let logger = options.logger()
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: options.name, logger: logger)
    let worker = PostgresBurstWorker(queue: queue, concurrency: concurrency) { run in
      printLine("ran \(run.key) = \(run.value) (attempt \(run.attempt), fence \(run.fence))")
      if run.value == "fail" { throw DemoFailure() }
    }
    // All a service needs: the worker waits for the client, migrates, and then works; at
    // shutdown (reverse order) the worker drains first, then the client closes.
    let group = ServiceGroup(
      services: [client, worker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    do {
      try await group.run()
    } catch {
      printError("dpd-postgres-demo: \(error)")
      throw ExitCode.failure
    }
    printLine("stopped")
  }
}

/// `submit KEY VALUE`: one `delay`.
struct SubmitCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "submit",
    abstract: "Submits VALUE for KEY: a burst that runs after --delay seconds of quiet.",
    discussion: """
      Migrates the schema first, so that it works before any worker ran. Submit the same key \
      again within the delay to see the burst keep only its last value.
      """)

  @OptionGroup var options: DemoOptions

  @Option(help: "Seconds of quiet before the burst runs.")
  var delay = 2.0

  @Argument(help: "The burst's key.")
  var key: String

  @Argument(help: "The value; \"fail\" makes the demo worker's handler throw.")
  var value: String

  func run() async throws {
    let configuration = try options.configuration()
    let logger = options.logger()
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: options.name, logger: logger)
    let (key, value, delay) = (key, value, delay)
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask { await client.run() }
      defer { group.cancelAll() }
      do {
        try await queue.waitForRunningClient()
        try await queue.migrate()
        try await queue.delay(key, for: .milliseconds(Int64(delay * 1000)), value: value)
      } catch {
        printError("dpd-postgres-demo: \(error)")
        throw ExitCode.failure
      }
    }
    printLine("submitted \(key) = \(value), due in \(delay) s unless submitted again")
  }
}

/// What the demo handler throws for the value "fail".
struct DemoFailure: Error, CustomStringConvertible {
  var description: String { "the demo handler fails for the value \"fail\"" }
}

func printLine(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func printError(_ line: String) {
  FileHandle.standardError.write(Data((line + "\n").utf8))
}
