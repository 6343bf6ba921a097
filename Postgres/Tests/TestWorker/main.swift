// dpd-postgres-test-worker: a replica under test, running a PostgresDelayedPreemptiveQueue<String>
// until SIGTERM or SIGINT; then it claims nothing more, lets running handlers finish, and exits
// 0. Its handler does what the flags ask:
//   --name NAME           queue name (default: demo)
//   --concurrency N       handlers in flight (default: 4)
//   --lease-ms N          lease (default: 30000)
//   --max-attempts N      maxAttempts (default: 5)
//   --retry-backoff-ms N  retryBackoff (default: 1000)
//   --handler-ms N        how long each handler sleeps (default: 0)
//   --handler-max-ms N    each handler sleeps a random time from 0 to N ms instead
//   --record              record each run's start and end in table dpd_test_runs
//   --record-batched      record runs (no times) in batches: for large backlogs
//   --record-timeout-ms N a record query slower than this makes the handler throw (default:
//                         2000, so that a restart cannot hold a handler and its lease); 0: no
//                         bound, as a handler that trusts its driver's queries to end
//   --record-retry-ms N   a record query that fails is tried again, every 50 ms, for up to N ms
//                         before the handler throws (default: 0, no retry), as a handler that
//                         writes its own table carefully would
//   --fenced              after the sleep, make a fenced write to dpd_test_fenced (even when
//                         cancelled, as a stale run that ignores cancellation would)
//   --observe-cancel-ms N after that, wait up to N ms for the run's cancellation and record when
//                         it came
//   --transactional       run with a transactional handler, which first writes the run (key,
//                         value, fence, worker) to dpd_test_tx_writes on its connection: that row
//                         exists if and only if the run's end committed with it
//   --tx-document         with --transactional, then also upsert the key's row of
//                         dpd_test_tx_documents (writes + 1, fence), which the row lock of a
//                         stale run's open transaction holds up
//   --crash               kill its own process (SIGKILL) in each run, after recording its start
//   --crash-when TEXT     the same, only in the runs whose recorded value contains TEXT
//   --quiet               print nothing per run
//   --log-level LEVEL     log the queue's lines at LEVEL and above to stderr
//   --leading             ask for options.leading (unsupported: stops with a precondition message)
//   --append              a queue of [String] with merge: .append; a run's value is recorded and
//                         printed as its JSON text
//   --max-submissions N   options.maxSubmissions
//   --minimum-spacing-ms N
//                         options.minimumSpacing, in milliseconds
// It prints "ready" on stdout once the schema is migrated and the worker runs.
import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchPostgres
import Dispatch
import Foundation
import Logging
import PostgresNIO

guard let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"], !url.isEmpty else {
  FileHandle.standardError.write(
    Data(
      "dpd-postgres-test-worker: set DPD_POSTGRES_URL (scripts/postgres.sh start prints one)\n"
        .utf8))
  exit(2)
}
let settings = WorkerSettings(arguments: Array(CommandLine.arguments.dropFirst()))
let configuration = try PostgresURL.configuration(url)
let client = PostgresClient(configuration: configuration)
let clientRun = Task { await client.run() }

let logger: Logger = {
  guard let level = settings.logLevel.flatMap(Logger.Level.init(rawValue:)) else {
    return PostgresDelayedPreemptiveQueue<String>.silentLogger
  }
  var logger = Logger(
    label: "dpd-postgres-test-worker", factory: { StreamLogHandler.standardError(label: $0) })
  logger.logLevel = level
  return logger
}()
let options = DelayOptions(
  leading: settings.leading, maxSubmissions: settings.maxSubmissions,
  minimumSpacing: settings.minimumSpacingMilliseconds.map { .milliseconds($0) })
let recorder = RunRecorder(client: client, worker: "\(getpid())", name: settings.name)
let batch = RunBatch(recorder: recorder)
let firstAttempts = FirstAttempts()
let batchWriter = Task {
  while !Task.isCancelled {
    try? await batch.flush()
    do { try await Task.sleep(for: .milliseconds(100)) } catch { return }
  }
}

/// Makes the queue, migrates, prints "ready", and runs the worker; `text` is how a value is
/// recorded and printed.
@Sendable func serve<Value: Codable & Sendable>(
  _ type: Value.Type, merge: PostgresValueMerge, text: @escaping @Sendable (Value) -> String
) async throws {
  var queue = PostgresDelayedPreemptiveQueue<Value>(
    client: client, configuration: configuration, name: settings.name, options: options,
    lease: .milliseconds(settings.leaseMilliseconds), maxAttempts: settings.maxAttempts,
    merge: merge, logger: logger)
  if ProcessInfo.processInfo.environment["DPD_TEST_WORKER_DEFAULT_TIMINGS"] == nil {
    queue.safetyPoll = .milliseconds(200)
    queue.outageBackoff = .seconds(1)
  }
  queue.retryBackoff = .milliseconds(settings.retryBackoffMilliseconds)
  try await queue.migrate()
  FileHandle.standardOutput.write(Data("ready\n".utf8))
  let recordTimeout = Duration.milliseconds(settings.recordTimeoutMilliseconds)
  let recordRetry = Duration.milliseconds(settings.recordRetryMilliseconds)
  /// A record query, bounded and retried as the flags say.
  @Sendable func recording<T: Sendable>(_ query: @escaping @Sendable () async throws -> T)
    async throws -> T
  {
    let giveUp = ContinuousClock.now + recordRetry
    while true {
      do {
        return recordTimeout > .zero ? try await bounded(recordTimeout, query) : try await query()
      } catch {
        guard ContinuousClock.now < giveUp else { throw error }
        try await Task.sleep(for: .milliseconds(50))
      }
    }
  }
  let handle: @Sendable (PostgresBurstRun<Value>, PostgresConnection?) async throws -> Void = {
    run, connection in
    let monotonic = monotonicSeconds()
    let firstAttempt = await firstAttempts.started(
      key: run.key, attempt: run.attempt, monotonic: monotonic)
    let value = text(run.value)
    if settings.recordBatched {
      await batch.add(key: run.key, value: value, fence: run.fence)
    }
    let id =
      settings.record
      ? try await recording {
        try await recorder.started(
          key: run.key, value: value, fence: run.fence, monotonic: monotonic,
          attempt: run.attempt, firstAttemptMonotonic: firstAttempt)
      } : nil
    if let connection {
      try await connection.query(
        """
        INSERT INTO dpd_test_tx_writes (name, key, value, fence, worker)
        VALUES (\(settings.name), \(run.key), \(value), \(run.fence), \("\(getpid())"))
        """, logger: logger)
      if settings.transactionalDocument {
        try await connection.query(
          """
          INSERT INTO dpd_test_tx_documents AS d (name, key, writes, fence)
          VALUES (\(settings.name), \(run.key), 1, \(run.fence))
          ON CONFLICT (name, key) DO UPDATE SET writes = d.writes + 1, fence = excluded.fence
          """, logger: logger)
      }
    }
    if settings.crash || settings.crashWhen.map({ value.contains($0) }) == true {
      kill(getpid(), SIGKILL)
    }
    var cancelledAt: Double?
    let sleep =
      settings.handlerMaxMilliseconds.map { Int.random(in: 0...$0) }
      ?? settings.handlerMilliseconds
    if sleep > 0 {
      do {
        try await Task.sleep(for: .milliseconds(sleep))
      } catch {
        cancelledAt = Date().timeIntervalSince1970
      }
    }
    if settings.fenced, let id {
      _ = try await recording {
        try await recorder.fencedWrite(id, key: run.key, value: value, fence: run.fence)
      }
    }
    if settings.observeCancellationMilliseconds > 0, cancelledAt == nil {
      let end = ContinuousClock.now + .milliseconds(settings.observeCancellationMilliseconds)
      while !Task.isCancelled && ContinuousClock.now < end {
        do { try await Task.sleep(for: .milliseconds(5)) } catch { break }
      }
      if Task.isCancelled { cancelledAt = Date().timeIntervalSince1970 }
    }
    if let id, let cancelledAt {
      try await recording { try await recorder.cancelled(id, at: cancelledAt) }
    }
    if let id, cancelledAt == nil {
      let ended = monotonicSeconds()
      try await recording { try await recorder.finished(id, monotonic: ended) }
    }
    if !settings.quiet { print("ran \(run.key) = \(value)") }
  }
  if settings.transactional {
    try await queue.run(concurrency: settings.concurrency) { run, connection in
      try await handle(run, connection)
    }
  } else {
    try await queue.run(concurrency: settings.concurrency) { run in try await handle(run, nil) }
  }
}

let work = Task {
  if settings.append {
    // Each run's array is recorded as its JSON text.
    try await serve([String].self, merge: .append) { values in
      String(decoding: (try? JSONEncoder().encode(values)) ?? Data("[]".utf8), as: UTF8.self)
    }
  } else {
    try await serve(String.self, merge: .replace) { $0 }
  }
  batchWriter.cancel()
  try await uncancelled { try await batch.flush() }
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
  FileHandle.standardError.write(Data("dpd-postgres-test-worker: \(error)\n".utf8))
  clientRun.cancel()
  exit(1)
}
