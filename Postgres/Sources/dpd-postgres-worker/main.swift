// dpd-postgres-worker: one replica's worker for a PostgresDelayedPreemptiveQueue<String> that
// prints each run, until SIGTERM or SIGINT.
//
//   DPD_POSTGRES_URL=$(scripts/postgres.sh url) swift run --package-path Postgres dpd-postgres-worker
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
let configuration = try PostgresURL.configuration(url)
let client = PostgresClient(configuration: configuration)
let clientRun = Task { await client.run() }
let queue = PostgresDelayedPreemptiveQueue<String>(
  client: client, configuration: configuration, name: "demo")
let work = Task {
  try await queue.migrate()
  print("ready")
  try await queue.run { run in print("ran \(run.key) = \(run.value)") }
}
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
  print("stopped")
} catch {
  FileHandle.standardError.write(Data("dpd-postgres-worker: \(error)\n".utf8))
  clientRun.cancel()
  exit(1)
}
