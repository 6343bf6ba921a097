// dpd-postgres-worker: one replica's worker for a PostgresDelayedPreemptiveQueue<String>.
//
//   DPD_POSTGRES_URL=$(scripts/postgres.sh url) swift run --package-path Postgres dpd-postgres-worker
//
// Runs `run(handler:)` with a demo handler that prints each key and value, until SIGTERM or
// SIGINT; then it claims nothing more, lets running handlers finish, and exits 0. Options (the
// tests use them to make it a replica under test):
//   --name NAME           queue name (default: demo)
//   --concurrency N       handlers in flight (default: 4)
//   --lease-ms N          lease (default: 30000)
//   --handler-ms N        how long each handler takes (default: 0)
//   --record              record each run's start and end in table dpd_test_runs
//   --quiet               print nothing per run
//   --leading             ask for options.leading (unsupported: stops with a precondition message)
// It prints "ready" on stdout once the schema is migrated and the worker runs.
import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchPostgres
import Dispatch
import Foundation
import PostgresNIO

guard let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"], !url.isEmpty else {
  FileHandle.standardError.write(
    Data("dpd-postgres-worker: set DPD_POSTGRES_URL (scripts/postgres.sh start prints one)\n".utf8))
  exit(2)
}
let settings = WorkerSettings(arguments: Array(CommandLine.arguments.dropFirst()))
let configuration = try PostgresURL.configuration(url)
let client = PostgresClient(configuration: configuration)
let clientRun = Task { await client.run() }

let queue = PostgresDelayedPreemptiveQueue<String>(
  client: client, configuration: configuration, name: settings.name,
  options: DelayOptions(leading: settings.leading), lease: .milliseconds(settings.leaseMilliseconds)
)
let recorder = RunRecorder(client: client, worker: "\(getpid())", name: settings.name)
let work = Task {
  try await queue.migrate()
  FileHandle.standardOutput.write(Data("ready\n".utf8))
  try await queue.run(concurrency: settings.concurrency) { key, value in
    let run = settings.record ? try await recorder.started(key: key, value: value) : nil
    if settings.handlerMilliseconds > 0 {
      try await Task.sleep(for: .milliseconds(settings.handlerMilliseconds))
    }
    if let run { try await recorder.finished(run) }
    if !settings.quiet { print("ran \(key) = \(value)") }
  }
}

// SIGTERM and SIGINT cancel the worker: it drains and returns.
var signalSources: [any DispatchSourceSignal] = []
for signalNumber in [SIGTERM, SIGINT] {
  signal(signalNumber, SIG_IGN)
  let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
  source.setEventHandler { work.cancel() }
  source.resume()
  signalSources.append(source)
}

do {
  try await work.value
  clientRun.cancel()
  if !settings.quiet { print("stopped") }
} catch {
  FileHandle.standardError.write(Data("dpd-postgres-worker: \(error)\n".utf8))
  clientRun.cancel()
  exit(1)
}
