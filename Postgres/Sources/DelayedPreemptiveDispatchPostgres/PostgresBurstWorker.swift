import ServiceLifecycle

/// Runs a queue's worker as a swift-service-lifecycle `Service`: works until graceful shutdown,
/// then claims nothing more and lets running handlers finish.
///
/// ``run()`` is ``PostgresDelayedPreemptiveQueue/run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)``
/// until the service group shuts down gracefully (on SIGTERM, say) or is cancelled. Then the
/// worker claims no more bursts, waits for the handlers in flight (they are not cancelled; a
/// handler that wants to stop early can itself await `gracefulShutdown()`), records their ends,
/// and returns. Bursts that are due meanwhile stay pending for the next worker. It survives
/// database outages as `run` does, and throws only what `run` throws: what retrying cannot
/// heal.
///
/// Put the `PostgresClient` before the worker in the group: a group shuts its services down in
/// reverse order, so the client keeps its connections until the handlers have finished.
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)
/// let reindex = PostgresDelayedPreemptiveQueue<Edit>(
///   client: client, configuration: configuration, name: "reindex", logger: logger)
/// let worker = PostgresBurstWorker(queue: reindex, concurrency: 8) { run in
///   try await index(run.key, run.value, fence: run.fence)
/// }
/// let group = ServiceGroup(
///   services: [client, worker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
///
/// The queue must be migrated (``PostgresDelayedPreemptiveQueue/migrate()``) before the worker
/// runs; a missing schema makes ``run()`` throw.
public struct PostgresBurstWorker<Value: Codable & Sendable>: Service {
  /// The queue whose bursts the worker runs.
  public let queue: PostgresDelayedPreemptiveQueue<Value>
  /// How many handlers run at once, at most.
  public let concurrency: Int
  let handler: @Sendable (PostgresBurstRun<Value>) async throws -> Void

  /// Creates the service; nothing runs until ``run()``.
  ///
  /// `concurrency` (default 4, at least 1; less stops the program with a message): how many
  /// handlers run at once, for different keys. `handler` runs once per run of a burst, in a
  /// task of its own, with the burst's ``PostgresBurstRun`` (key, last value, attempt, fence);
  /// a handler that throws is retried with backoff, and kept in
  /// ``PostgresDelayedPreemptiveQueue/failures()`` after the queue's `maxAttempts` runs.
  public init(
    queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int = 4,
    handler: @escaping @Sendable (PostgresBurstRun<Value>) async throws -> Void
  ) {
    requireArgument(concurrency >= 1, "PostgresBurstWorker: concurrency must be at least 1")
    self.queue = queue
    self.concurrency = concurrency
    self.handler = handler
  }

  /// Works until graceful shutdown or cancellation, then claims nothing more, lets the running
  /// handlers finish, and returns. Outside a `ServiceGroup` only cancellation ends it.
  ///
  /// Throws what ``PostgresDelayedPreemptiveQueue/run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)``
  /// throws, after the handlers in flight have finished: a
  /// ``PostgresDelayedPreemptiveQueueError`` that retrying cannot heal (`newerSchema`, or
  /// `databaseError` for a schema that was never migrated, a missing permission, failed
  /// authentication or an unknown database). Outages never end it.
  public func run() async throws {
    let queue = queue
    let concurrency = concurrency
    let handler = handler
    try await cancelWhenGracefulShutdown {
      try await queue.run(concurrency: concurrency, handler: handler)
    }
  }
}

extension PostgresBurstWorker: CustomStringConvertible {
  /// `PostgresBurstWorker(queue: NAME)`, as a service group names the service in its logs.
  public var description: String { "PostgresBurstWorker(queue: \(queue.name))" }
}
