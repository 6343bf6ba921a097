import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO

/// A worker process of the drain (`dpd-postgres-bench --worker NAME CONCURRENCY`): the package's
/// worker with a handler that only counts its runs, as pgqueuer's drain worker does
/// (scripts/postgres-peers), so that the drain measures the queue, not a handler's output. Every
/// 10 ms it prints how many runs ended since its last line, for ``RunCounter``, unless
/// `DPD_BENCH_WORKER_PROGRESS` is `off` (scripts/postgres-worker-instructions.sh, which counts
/// the worker's instructions per run and has no use for the lines); it works until it is killed.
enum BenchWorker {
  static func run(
    client: PostgresClient, configuration: PostgresClient.Configuration, name: String,
    concurrency: Int
  ) async throws {
    var logger = Logger(label: "dpd-postgres-bench.worker")
    logger.logLevel = .error
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: name, logger: logger)
    try await queue.migrate()
    let ran = Locked(0)
    let reports = ProcessInfo.processInfo.environment["DPD_BENCH_WORKER_PROGRESS"] != "off"
    let reporter = Task {
      while reports && !Task.isCancelled {
        try await Task.sleep(for: .milliseconds(10))
        let count = ran.withLock { count in
          defer { count = 0 }
          return count
        }
        if count > 0 { FileHandle.standardOutput.write(Data("\(count)\n".utf8)) }
      }
    }
    defer { reporter.cancel() }
    try await queue.run(concurrency: concurrency) { (_: PostgresBurstRun<String>) in
      ran.withLock { $0 += 1 }
    }
  }
}
