@_spi(Preconditions) import DelayedPreemptiveDispatch
import PostgresNIO
import ServiceLifecycle

/// Runs a queue's worker as a swift-service-lifecycle `Service`: prepares the schema, works until
/// graceful shutdown, then claims nothing more and lets running handlers finish.
///
/// A `ServiceGroup` of the client and the worker is all a service needs, against a database
/// that is fresh, unmigrated or out of reach at start:
///
/// ```swift
/// import ServiceLifecycle
/// import UnixSignals
///
/// let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
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
/// Before it claims, ``run()`` waits until the client runs (it leases no connection before, so
/// postgres-nio has nothing to warn of; a client that does not run within two seconds is logged
/// as a warning), then migrates the schema (``PostgresDelayedPreemptiveQueue/migrate()``),
/// retrying while the database cannot be reached, as a worker retries its claims. A role that
/// may not migrate (SQLSTATE `42501`) waits instead until a role that may has migrated the
/// schema to this package's version (it reads `dpd_schema` for that; a role that may not read
/// it either claims at once). Then it is
/// ``PostgresDelayedPreemptiveQueue/run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)``
/// until the service group shuts down gracefully (on SIGTERM, say) or is cancelled: the worker
/// claims no more bursts, waits for the handlers in flight (they are not cancelled; a handler
/// that wants to stop early can itself await `gracefulShutdown()`), records their ends, and
/// returns. Bursts that are due meanwhile stay pending for the next worker. It survives database
/// outages as `run` does, and throws only what retrying cannot heal.
/// `PostgresWorkerStartTests` holds each step against a fresh database, one that is down at
/// start, and a role that may not migrate.
///
/// Put the `PostgresClient` before the worker in the group: a group shuts its services down in
/// reverse order, so the client keeps its connections until the handlers have finished.
public struct PostgresBurstWorker<Value: Codable & Sendable>: Service {
  /// The queue whose bursts the worker runs.
  public let queue: PostgresDelayedPreemptiveQueue<Value>
  /// How many handlers run at once, at most.
  public let concurrency: Int
  let handler: RunHandler<Value>

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
    self.handler = .plain(handler)
  }

  /// Creates the service with a transactional handler; nothing runs until ``run()``. Each run's
  /// handler gets a connection with a transaction open, and the run's end is written in that
  /// same transaction, which commits only while the run's claim still holds the key:
  /// ``PostgresDelayedPreemptiveQueue/run(concurrency:transactionalHandler:)`` says what that
  /// guarantees and what it costs.
  public init(
    queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int = 4,
    transactionalHandler:
      @escaping @Sendable (PostgresBurstRun<Value>, PostgresConnection)
      async throws -> Void
  ) {
    requireArgument(concurrency >= 1, "PostgresBurstWorker: concurrency must be at least 1")
    self.queue = queue
    self.concurrency = concurrency
    self.handler = .transactional(transactionalHandler)
  }

  /// Prepares the schema (see ``PostgresBurstWorker``), then works until graceful shutdown or
  /// cancellation, claims nothing more, lets the running handlers finish, and returns. Outside a
  /// `ServiceGroup` only cancellation ends it; a shutdown while it prepares ends it at once.
  ///
  /// Throws, after the handlers in flight have finished, a
  /// ``PostgresDelayedPreemptiveQueueError`` that retrying cannot heal: `newerSchema`, or
  /// `databaseError` for a refusal of the migration other than a missing permission, or what
  /// ``PostgresDelayedPreemptiveQueue/run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)``
  /// throws. Outages never end it, and neither does a connection refused for its password or
  /// database name: it retries those and logs the server's reason, so that an operator can fix
  /// them while it waits.
  public func run() async throws {
    let queue = queue
    let concurrency = concurrency
    let handler = handler
    try await cancelWhenGracefulShutdown {
      do {
        try await queue.prepareForWork()
      } catch is CancellationError {
        return
      }
      try await queue.work(concurrency: concurrency, handler: handler)
    }
  }
}

extension PostgresBurstWorker: CustomStringConvertible {
  /// `PostgresBurstWorker(queue: NAME)`, as a service group names the service in its logs.
  public var description: String { "PostgresBurstWorker(queue: \(queue.name))" }
}
