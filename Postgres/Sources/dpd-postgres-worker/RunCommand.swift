import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// `run`: a demo worker in a `ServiceGroup`, until SIGTERM or SIGINT.
struct RunCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "run",
    abstract: "Runs a demo worker until SIGTERM or SIGINT (the default subcommand).",
    discussion: """
      Migrates the schema, prints "ready", then prints each run as "ran KEY = VALUE \
      (attempt N, fence F)". A value "fail" makes the handler throw, so that the burst is \
      retried with backoff and, after 5 runs, kept as a failure (see state, retry, discard). \
      On SIGTERM or SIGINT the worker claims nothing more, lets running handlers finish, \
      prints "stopped" and exits 0.
      """)

  @OptionGroup var queueOptions: QueueOptions

  @Option(help: "How many handlers run at once, at most.")
  var concurrency = 4

  @Option(
    help: "How long a claimed burst stays claimed without a renewal, in seconds (0.01 to 86400).")
  var leaseSeconds = 30.0

  func validate() throws {
    guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
    guard leaseSeconds >= 0.01, leaseSeconds <= 86_400 else {
      throw ValidationError("--lease-seconds must be from 0.01 to 86400 (a day)")
    }
  }

  func run() async throws {
    let configuration = try queueOptions.configuration()
    let logger = queueOptions.logger()
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: queueOptions.name,
      lease: .milliseconds(leaseSeconds * 1000), logger: logger)
    let worker = PostgresBurstWorker(queue: queue, concurrency: concurrency) { run in
      printLine("ran \(run.key) = \(run.value) (attempt \(run.attempt), fence \(run.fence))")
      logger.debug(
        "ran", metadata: ["dpd.key": "\(run.key)", "dpd.attempt": "\(run.attempt)"])
      if run.value == "fail" { throw DemoFailure() }
    }
    // Reverse order at shutdown: the worker drains first, then the client closes.
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [
          .init(service: client),
          .init(service: MigratedWorker(worker: worker, logger: logger)),
        ],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    do {
      try await group.run()
    } catch {
      printError("dpd-postgres-worker: \(error)")
      throw ExitCode.failure
    }
    printLine("stopped")
  }
}

/// The demo worker's service: migrates the schema, then runs the worker.
struct MigratedWorker: Service, CustomStringConvertible {
  let worker: PostgresBurstWorker<String>
  let logger: Logger

  var description: String { "\(worker)" }

  func run() async throws {
    try await worker.queue.migrate()
    printLine("ready")
    logger.info(
      "worker ready",
      metadata: ["dpd.queue": "\(worker.queue.name)", "dpd.concurrency": "\(worker.concurrency)"])
    try await worker.run()
  }
}

/// What the demo handler throws for the value "fail".
struct DemoFailure: Error, CustomStringConvertible {
  var description: String { "the demo handler fails for the value \"fail\"" }
}
