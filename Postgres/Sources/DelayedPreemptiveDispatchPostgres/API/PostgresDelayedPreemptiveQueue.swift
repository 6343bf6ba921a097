@_spi(Preconditions) import DelayedPreemptiveDispatch
import Foundation
import Instrumentation
import Logging
import Metrics
import PostgresNIO
import Tracing

/// Keyed bursts shared by every replica of a service through one PostgreSQL database: the
/// in-process `KeyedDelayedPreemptiveActor`'s rules (each key has its own bursts, with the
/// deadline policy, `maxWait`, `cancel` and `flush` of the in-process types), with the work
/// stored as one row per key.
///
/// Any replica may call ``delay(_:for:value:)``; any replica that calls
/// ``run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)`` runs due bursts. A burst
/// runs once, on one replica, with its last value or, with `merge: .append`, with every value
/// of the burst (see ``PostgresValueMerge``), and never beside another run of its key, as long
/// as no replica dies and every replica reaches the database within its `lease`; a replica
/// that dies mid-run hands the burst to another one once its `lease` has passed. A handler that
/// throws is retried with exponential backoff and, after `maxAttempts`, kept in
/// ``failures()``. <doc:GuaranteesInProduction> states each rule with the test that holds it.
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)
/// let reindex = PostgresDelayedPreemptiveQueue<Edit>(
///   client: client, configuration: configuration, name: "reindex",
///   options: DelayOptions(maxWait: .seconds(30)))
/// try await reindex.migrate()
/// try await reindex.delay(document.id, for: .seconds(2), value: edit)   // any replica
/// try await reindex.run { documentID, edit in try await index(documentID, edit) }  // workers
/// ```
///
/// All instants come from the database's clock (`clock_timestamp()`), so replicas with skewed
/// clocks agree on every deadline. The client must be running for any call to complete: put it
/// in the service's `ServiceGroup`, where a ``PostgresBurstWorker`` also migrates the schema
/// (<doc:GettingStarted>).
public struct PostgresDelayedPreemptiveQueue<Value: Codable & Sendable>: Sendable {
  let client: PostgresClient
  let endpoint: Endpoint
  /// Asks the server why connections fail; nil when the configuration was not given.
  let probe: ConnectionProbe?
  let submissions = SubmissionBatcher<Value>()
  /// The one timer that bounds every database call of this instance and its copies.
  let callTimers = CallTimers()
  /// The connection the queue keeps for its `delay` statements while they keep coming.
  let heldConnection: HeldConnection
  let metrics: QueueMetrics
  /// The queue's name: its rows in `dpd_bursts` are those with this `name`.
  public let name: String
  /// The options given at `init`.
  public let options: DelayOptions
  /// How a burst's submissions make its value, given at `init`: the last one wins (`.replace`),
  /// or their arrays are concatenated (`.append`).
  public let merge: PostgresValueMerge
  /// How long a claimed burst stays claimed without a renewal.
  public let lease: Duration
  /// How many runs a burst may have (each claim counts, also one whose worker died or lost the
  /// lease) before it is kept in ``failures()``.
  public let maxAttempts: Int
  /// Where the queue logs: lost leases and takeovers, retries and kept failures,
  /// outages and recoveries, migrations. Every line carries the queue's name as metadata
  /// `dpd.queue`; keys appear only at debug level.
  public let logger: Logger

  /// The longest key, in bytes of UTF-8: 1,024. PostgreSQL's index refuses entries over about
  /// 2.7 KB; a longer key gets ``PostgresDelayedPreemptiveQueueError/invalidKey(key:reason:)``.
  public static var maximumKeyBytes: Int { 1024 }
  /// The longest queue name, in bytes of UTF-8: 256. A longer name stops the program at `init`.
  public static var maximumNameBytes: Int { 256 }

  /// The first retry of a handler that threw waits this long; each further one twice as long
  /// as the one before, up to five minutes. Default: one second.
  public var retryBackoff: Duration = .seconds(1)
  /// The longest a sleeping worker waits before it looks for due work again, in case a wake-up
  /// was missed (a NOTIFY is sent only when a submission moves the earliest deadline earlier
  /// or lands while the earliest one is less than 250 ms away or past, when ``flush(_:)`` finds
  /// a pending burst, and when ``retryFailure(_:)`` finds a kept failure). Default: one second.
  public var safetyPoll: Duration = .seconds(1)
  /// The longest any call waits for the database, in fact and not only in the message: a call
  /// that got no connection by then throws
  /// ``PostgresDelayedPreemptiveQueueError/databaseUnreachable(host:port:reason:)`` (nothing
  /// was written); a call that was sent and got no answer by then throws
  /// ``PostgresDelayedPreemptiveQueueError/outcomeUnknown(key:host:port:reason:)``, and the
  /// connection it was sent on is closed, never lent again: a connection that carried no answer
  /// within this bound counts as dead, which is how the queue finds a connection that a network
  /// partition made silent without closing it (<doc:GuaranteesInProduction#Partitions>). Default:
  /// ten seconds.
  public var connectionTimeout: Duration = .seconds(10)
  /// The longest a handler may run; nil for no bound. A run past it is given up: its handler
  /// is cancelled (a transactional run's connection is closed, which rolls its transaction
  /// back), and the run ends as a handler that threw does, retried after ``retryBackoff`` and
  /// kept after `maxAttempts` runs, with `last_error` saying why. A handler that has not
  /// returned a third of the lease (at least five seconds) after its cancellation is abandoned: the worker no longer waits for
  /// it, for its slot or to shut down, and records the run's end without it. Such a handler
  /// may still be running when its burst runs again, so its writes must be fenced, as those of
  /// a run whose lease was lost (<doc:GuaranteesInProduction#A-handler-that-does-not-return>).
  /// Default: 30 seconds, the default `lease`: a debounced task is short, and a handler can
  /// fail to return through no fault of its own, for example a query that postgres-nio 1.33.2
  /// never answers because it was sent on a connection the server had just closed.
  public var runTimeout: Duration? = .seconds(30) {
    willSet {
      if let newValue {
        requireArgument(newValue > .zero, "runTimeout must be positive, or nil for no bound")
      }
    }
  }
  /// While the database cannot be reached, a worker retries its claims, renewals and
  /// completions after a backoff that starts at 100 ms and doubles up to this cap. Default:
  /// five seconds. Bursts due after an outage start within `safetyPoll` plus this cap of the
  /// moment the server accepts connections again: postgres-nio's pool retries a failed
  /// connection after 100 ms × 1.25ⁿ (up to a minute), so meanwhile the worker of a queue made
  /// with its client's configuration claims through a connection of its own.
  public var outageBackoff: Duration = .seconds(5)
  /// The tests' seam for answers lost after a statement was applied; nil outside the tests.
  var faults: DatabaseFaults?
  /// The tests' tracer; nil outside the tests, where the queue traces through the global
  /// `InstrumentationSystem.tracer` (P18), read at each call, so that a bootstrap after `init`
  /// counts.
  var tracer: (any Tracer)?
  /// The tracer that `delay` injects with and a run's span comes from.
  var tracerInUse: any Tracer { tracer ?? InstrumentationSystem.tracer }

  /// Creates a handle on the queue `name` in the database that `client` reaches; several
  /// handles (on several replicas) with one `name` share its bursts.
  ///
  /// Nothing is written until the first call. `name` separates queues that share the database;
  /// an empty name, one with a NUL character, or one over ``maximumNameBytes`` is a programmer
  /// error and stops the program with a message. `options` applies as in-process
  /// (`deadlinePolicy`, `maxWait`; `tolerance` is ignored: the database gives no timer leeway);
  /// `options.leading` is not supported here and stops the program with a message. `lease`
  /// (default 30 s, at least 10 ms): how long a claimed burst stays claimed without a renewal
  /// before another replica may take it over; the running replica renews it every third of
  /// `lease`. `maxAttempts` (default 5, at least 1): how many runs a burst may have before it is
  /// kept in ``failures()``. `options.maxSubmissions` bounds a burst as in-process: the burst
  /// that has received that many submissions is due at once, and the next submission starts a
  /// new burst, also when no worker has claimed the full one yet. `options.minimumSpacing` holds
  /// per key across replicas, on the database's clock: a key's runs start at least that far
  /// apart, whichever replica runs them, and after a run its key's row is kept, idle, until the
  /// spacing has passed (<doc:GuaranteesInProduction#Runs-of-one-key-at-least-the-spacing-apart>);
  /// give every replica the same options. `merge` (default `.replace`):
  /// how a burst's submissions make the value its handler gets, the last one (`.replace`) or
  /// the concatenation of their arrays in submission order (`.append`, for a `Value` that
  /// encodes as a JSON array). `logger` (default: discards everything) gets the queue's log
  /// lines; `metricsFactory` (default: the global `MetricsSystem.factory`) makes its metrics.
  ///
  /// A database that cannot be reached is reported without its host and port, which the client
  /// does not expose, and without the server's reason; use
  /// ``init(client:configuration:name:options:lease:maxAttempts:merge:logger:metricsFactory:)``
  /// to have them named.
  public init(
    client: PostgresClient, name: String, options: DelayOptions = DelayOptions(),
    lease: Duration = .seconds(30), maxAttempts: Int = 5, merge: PostgresValueMerge = .replace,
    logger: Logger = Self.silentLogger,
    metricsFactory: any MetricsFactory = MetricsSystem.factory
  ) {
    self.init(
      client: client, endpoint: Endpoint(host: "(host not given)", port: 0), probe: nil,
      holdsConnection: false, name: name, options: options, lease: lease,
      maxAttempts: maxAttempts, merge: merge, logger: logger, metricsFactory: metricsFactory)
  }

  /// The same as ``init(client:name:options:lease:maxAttempts:merge:logger:metricsFactory:)``, given
  /// the configuration that `client` was made with, so that an unreachable database is
  /// reported by host and port, with the reason the server or the network gives (a wrong
  /// password, an unknown database, a refused connection) as soon as it is known. Knowing the
  /// pool's size, such a queue also keeps one connection of a pool of four or more for its
  /// single `delay` calls while they keep coming
  /// (<doc:GuaranteesInProduction#A-single-delay-skips-the-pool>).
  public init(
    client: PostgresClient, configuration: PostgresClient.Configuration, name: String,
    options: DelayOptions = DelayOptions(), lease: Duration = .seconds(30), maxAttempts: Int = 5,
    merge: PostgresValueMerge = .replace, logger: Logger = Self.silentLogger,
    metricsFactory: any MetricsFactory = MetricsSystem.factory
  ) {
    self.init(
      client: client,
      endpoint: Endpoint(
        host: configuration.host ?? configuration.unixSocketPath ?? "(unknown host)",
        port: configuration.port ?? 0),
      probe: ConnectionProbe(configuration: configuration),
      holdsConnection: configuration.options.maximumConnections >= HeldConnection.minimumPool,
      name: name, options: options, lease: lease, maxAttempts: maxAttempts, merge: merge,
      logger: logger, metricsFactory: metricsFactory)
  }

  init(
    client: PostgresClient, endpoint: Endpoint, probe: ConnectionProbe?, holdsConnection: Bool,
    name: String, options: DelayOptions, lease: Duration, maxAttempts: Int,
    merge: PostgresValueMerge,
    logger: Logger, metricsFactory: any MetricsFactory
  ) {
    requireArgument(
      !name.isEmpty, "PostgresDelayedPreemptiveQueue: name must not be empty")
    requireArgument(
      !name.unicodeScalars.contains("\0"),
      "PostgresDelayedPreemptiveQueue: name must not contain a NUL character")
    requireArgument(
      name.utf8.count <= Self.maximumNameBytes,
      "PostgresDelayedPreemptiveQueue: name must be at most \(Self.maximumNameBytes) bytes of "
        + "UTF-8 (it has \(name.utf8.count))")
    requireArgument(
      !options.leading,
      "PostgresDelayedPreemptiveQueue: options.leading is not supported across replicas; "
        + "use a DelayOptions with leading: false")
    requireArgument(
      lease >= .milliseconds(10), "PostgresDelayedPreemptiveQueue: lease must be at least 10 ms")
    requireArgument(
      maxAttempts >= 1, "PostgresDelayedPreemptiveQueue: maxAttempts must be at least 1")
    if let maxSubmissions = options.maxSubmissions {
      requireArgument(
        maxSubmissions >= 1,
        "PostgresDelayedPreemptiveQueue: options.maxSubmissions must be at least 1 (or nil for "
          + "no bound), got \(maxSubmissions)")
    }
    if let maxWait = options.maxWait {
      requireArgument(
        maxWait >= .zero, "PostgresDelayedPreemptiveQueue: options.maxWait must not be negative")
    }
    self.client = client
    self.endpoint = endpoint
    self.probe = probe
    self.name = name
    self.options = options
    self.merge = merge
    self.lease = lease
    self.maxAttempts = maxAttempts
    var logger = logger
    logger[metadataKey: "dpd.queue"] = "\(name)"
    self.logger = logger
    self.heldConnection = HeldConnection(
      enabled: holdsConnection, endpoint: endpoint, logger: logger)
    self.metrics = QueueMetrics(queue: name, factory: metricsFactory)
  }

  /// The default logger: it discards every line.
  public static var silentLogger: Logger {
    Logger(label: "DelayedPreemptiveDispatchPostgres", factory: { _ in SwiftLogNoOpLogHandler() })
  }

  /// Creates or upgrades the schema (tables `dpd_schema`, `dpd_bursts` and `dpd_failures`,
  /// sequence `dpd_fence`); idempotent, and safe to call from every replica at start: concurrent calls
  /// wait for the first one.
  ///
  /// Throws ``PostgresDelayedPreemptiveQueueError/newerSchema(found:supported:)`` when a newer
  /// release of this package has migrated the database, and the other
  /// ``PostgresDelayedPreemptiveQueueError`` cases when the database cannot be reached or
  /// refuses (`databaseError` with SQLSTATE `42501` when the role may not create tables).
  public func migrate() async throws {
    let logger = logger
    let statement = StoreOptionsStatement(name: name, options: storedOptions)
    let previous = try await database("migrate") { connection in
      try await connection.query(Schema.migration, logger: logger)
      return try await connection.rows(statement, logger: logger).first
    }
    logger.info("schema ready", metadata: ["dpd.schema.version": "\(Schema.version)"])
    if let previous, previous != statement.options {
      let message =
        "this replica's options differ from those stored for the queue: SQL callers of "
        + "dpd_delay now use this replica's (stored: \(previous); now: \(statement.options))"
      logger.warning("\(message)")
    }
  }

  /// The queue's options as `migrate()` stores them for `dpd_delay`.
  var storedOptions: StoredOptions {
    StoredOptions(
      deadlinePolicy: options.deadlinePolicy == .restart ? "restart" : "extend",
      maxWaitMilliseconds: options.maxWait?.milliseconds, maxSubmissions: options.maxSubmissions,
      merge: merge == .append ? "append" : "replace",
      minimumSpacingMilliseconds: minimumSpacingMilliseconds)
  }

  /// Submits `value` for `key`: starts the key's burst with a deadline `duration` from the
  /// database's now, or moves the pending burst's deadline (`.extend`: only later; `.restart`:
  /// to now + `duration`), bounded by the burst's first submission plus `maxWait`. With
  /// `merge: .replace` the value replaces the burst's value: the handler gets the last one. With
  /// `merge: .append` the value, a JSON array, is appended to the burst's: the handler gets the
  /// concatenation of the burst's arrays in submission order. A burst that has received
  /// `options.maxSubmissions` submissions is due at once; the next submission starts a new
  /// burst that runs after it. With `options.minimumSpacing`, the burst is due no sooner than the
  /// spacing after the start of the key's last run (its deadline is still computed from its
  /// submissions). A `duration` or `maxWait` beyond what PostgreSQL's `interval`
  /// holds saturates to 200 years: "never, unless flushed", as in-process, never a raw SQL
  /// error; a negative one counts as zero.
  ///
  /// When the key's handler is running, or waits for the retry of a run that threw, the
  /// submission starts a new burst that runs after that one, never beside it, with its own value
  /// only. So it does when the key's burst is due and no worker has claimed it yet: due means due
  /// (T7), so which values run together does not depend on how late the workers are. The key's kept failures (``failures()``) stay kept, with their values. One
  /// `INSERT … ON CONFLICT DO UPDATE`, in the database's function `dpd_submit`, which SQL
  /// callers' `dpd_delay` uses too (<doc:WorkThatCommitsWithYourData>); it wakes sleeping
  /// workers only when it makes the earliest
  /// deadline earlier. On a quiet queue a call sends its statement at once, from its own task;
  /// concurrent calls on one instance (and its copies) are sent together as one multi-row
  /// upsert. Each call returns once its submission is stored, and a call that returned is never
  /// lost.
  ///
  /// With a tracer bootstrapped in swift-distributed-tracing's `InstrumentationSystem`, the
  /// calling task's current `ServiceContext` is stored with the submission, through the tracer's
  /// `inject`, so that the run's span links to it (the first and the newest of a burst, 128 in
  /// all; <doc:OperatingAQueue#Turn-tracing-on>). Without one, nothing is stored for it.
  ///
  /// Throws, always a ``PostgresDelayedPreemptiveQueueError``: `emptyKey` or `invalidKey` for
  /// a key that cannot be stored, `valueNotEncodable` for a value that does not encode as JSON
  /// or holds a NUL character, or (with `merge: .append`) does not encode as a JSON array (in
  /// these cases before the submission joins a batch, so no other caller is affected);
  /// `databaseUnreachable` when no connection could be had
  /// within `connectionTimeout` (nothing was written); `outcomeUnknown` when the submission was
  /// sent but not confirmed within `connectionTimeout` (retrying is safe; with `merge: .append`
  /// a retry may append the value twice, if the first call was applied); `databaseError` when
  /// the database refused it.
  public func delay(_ key: String, for duration: Duration, value: Value) async throws {
    _ = try await submit(key, for: duration, value: value)
  }

  /// ``delay(_:for:value:)``, returning whether the submission sent a wake-up NOTIFY.
  func submit(_ key: String, for duration: Duration, value: Value) async throws -> Bool {
    let submission = try encoded(key, for: duration, value: value)
    let notified = try await submissions.submit(submission, using: self)
    metrics.submissions.increment()
    return notified
  }

  /// A submission as the statement takes it, with the caller's trace context; the typed error
  /// of a key or value that cannot be stored, before anything is sent.
  func encoded(_ key: String, for duration: Duration, value: Value) throws
    -> DelayStatement.Submission
  {
    let key = try checked(key)
    let json = try ValueCodec.encode(value, key: key)
    if merge == .append { try ValueCodec.requireArray(json, key: key) }
    // The caller's trace context, read here in the caller's task: nothing to inject (and no
    // tracer to read) when no context is current, as without a tracer.
    let trace = ServiceContext.current.map { TraceCarrier.json(injecting: $0, with: tracerInUse) }
    return DelayStatement.Submission(
      key: key, json: json, delayMilliseconds: duration.milliseconds, traceContext: trace ?? "")
  }

  /// The statement that writes `batch` with the queue's options.
  func delayStatement(_ batch: [DelayStatement.Submission]) -> DelayStatement {
    DelayStatement(
      name: name, submissions: batch, restart: options.deadlinePolicy == .restart,
      maxWaitMilliseconds: options.maxWait?.milliseconds,
      maxSubmissions: options.maxSubmissions, append: merge == .append,
      minimumSpacingMilliseconds: minimumSpacingMilliseconds)
  }

  /// Writes a batch of submissions with distinct keys in one statement, waiting at most
  /// `timeout`.
  func upsert(_ batch: [DelayStatement.Submission], timeout: Duration) async throws -> Bool {
    let statement = delayStatement(batch)
    let logger = logger
    // A batch's callers wait for it in other tasks, and a caller that sends its own submission
    // is not cancelled out of it either: a `delay` is written whatever becomes of its caller.
    if let held = heldConnection.take(from: client) {
      return try await database("delay", timeout: timeout, on: held.connection) { _ in
        statement.send(on: held, logger: logger)
      }
    }
    return try await database("delay", timeout: timeout, cancellable: false) { connection in
      try await statement.send(on: connection, committing: true, logger: logger)
    }
  }

  /// Cancels the key's pending bursts: their handler will not run for them. Returns whether
  /// there was one. The pending bursts are the newest one while it takes submissions, a burst
  /// that waits for the retry of a run that threw, and failures retried with
  /// ``retryFailure(_:)`` that have not run yet. A run in progress is not interrupted, and a
  /// closed burst (one that reached `maxSubmissions`, or was flushed) is a decided run, as
  /// in-process (T2, C4): it stays, also behind a running one, and runs. A failed burst stays in
  /// ``failures()``. If the running replica dies, the re-run after its
  /// lease gets the running burst's own value. Cancelling does not reset `minimumSpacing`: the
  /// key's next run still starts no sooner than the spacing after its last run's start.
  ///
  /// Throws as ``delay(_:for:value:)`` does, but for the value; and `CancellationError` when
  /// the calling task is cancelled before the call was sent (nothing was written).
  @discardableResult public func cancel(_ key: String) async throws -> Bool {
    let statement = CancelStatement(
      name: name, key: try checked(key), minimumSpacingMilliseconds: minimumSpacingMilliseconds)
    let logger = logger
    return try await database("cancel", key: statement.key) { connection in
      try await connection.rows(Committed(statement), logger: logger).first ?? false
    }
  }

  /// Makes the key's pending bursts (see ``cancel(_:)``) due now and, when there was one, wakes
  /// the workers; returns whether there was one. The newest burst is closed by it: the next
  /// submission starts a new burst. A pending burst waiting behind a running one becomes due
  /// when that run has finished, and one behind a closed burst (one that reached
  /// `maxSubmissions`, T2) right after that one has run, which keeps its own due instant. For a
  /// key without a pending burst (unknown, failed for good, running with no submission since its
  /// claim, or only closed bursts) it changes nothing and sends no NOTIFY. It lifts
  /// `minimumSpacing` for the first run in line when that one is pending, which the operator
  /// asked for; the spacing counts again from that run's start, and a pending burst behind a
  /// closed one waits for the spacing after it.
  ///
  /// Throws as ``cancel(_:)`` does.
  @discardableResult public func flush(_ key: String) async throws -> Bool {
    let statement = FlushStatement(name: name, key: try checked(key))
    let logger = logger
    return try await database("flush", key: statement.key) { connection in
      try await connection.rows(Committed(statement), logger: logger).first ?? false
    }
  }

  /// Whether the key has work that has not finished: a burst waiting for its deadline, a retry
  /// or the end of `minimumSpacing`, or running. A failed burst is not pending (see
  /// ``failures()``), nor is a key whose only record is the start of its last run, kept for the
  /// spacing.
  ///
  /// Throws as ``cancel(_:)`` does.
  public func isPending(_ key: String) async throws -> Bool {
    let statement = IsPendingStatement(name: name, key: try checked(key))
    let logger = logger
    return try await database("isPending", key: statement.key) { connection in
      try await connection.rows(statement, logger: logger).first ?? false
    }
  }

  /// How many keys have work that has not finished (see ``isPending(_:)``), over all replicas.
  /// Zero means every submission so far has run or failed for good.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError`; `CancellationError`
  /// when the calling task is cancelled before the call was sent.
  public func pendingCount() async throws -> Int {
    let statement = PendingCountStatement(name: name)
    let logger = logger
    return try await database("pendingCount") { connection in
      try await connection.rows(statement, logger: logger).first ?? 0
    }
  }

  /// Bursts that ran `maxAttempts` times without success, oldest first, each with its own
  /// ``PostgresBurstFailure/id``, kept with their values until ``retryFailure(id:)`` or
  /// ``retryFailure(_:)`` runs them again or ``discardFailure(id:)`` or ``discardFailure(_:)``
  /// removes them (P17). A key may have several; its later bursts and new submissions run as
  /// usual meanwhile. A kept value that does not decode as `Value` is left out (it is logged at
  /// warning level, without its key): ``rawFailures()`` lists every kept failure as its stored
  /// JSON.
  ///
  /// Throws `databaseUnreachable`, `outcomeUnknown` or `databaseError`; `CancellationError`
  /// when the calling task is cancelled before the call was sent.
  public func failures() async throws -> [PostgresBurstFailure<Value>] {
    var undecodable = 0
    let failures = try await rawFailures().compactMap { raw -> PostgresBurstFailure<Value>? in
      guard let value = try? ValueCodec.decode(Value.self, from: raw.json, key: raw.key) else {
        undecodable += 1
        return nil
      }
      return PostgresBurstFailure(
        id: raw.id, key: raw.key, value: value, attempts: raw.attempts, lastError: raw.lastError)
    }
    if undecodable > 0 {
      let message =
        "failures(): \(undecodable) kept failures do not decode as \(Value.self); rawFailures() "
        + "lists them"
      logger.warning("\(message)")
    }
    return failures
  }

  /// `options.minimumSpacing` in milliseconds, as the statements take it: 0 for none.
  var minimumSpacingMilliseconds: Double { options.minimumSpacing?.milliseconds ?? 0 }

  /// The key, if it can be stored; else the typed error that says why, before anything is
  /// sent, so that a bad key fails alone.
  func checked(_ key: String) throws -> String {
    guard !key.isEmpty else { throw PostgresDelayedPreemptiveQueueError.emptyKey }
    let bytes = key.utf8.count
    if bytes > Self.maximumKeyBytes {
      throw PostgresDelayedPreemptiveQueueError.invalidKey(
        key: String(key.prefix(64)) + "…",
        reason: "\(bytes) bytes of UTF-8, more than the \(Self.maximumKeyBytes) a key may have")
    }
    if key.utf8.contains(0) {
      throw PostgresDelayedPreemptiveQueueError.invalidKey(
        key: String(key.prefix(64)).replacingOccurrences(of: "\0", with: "\\0"),
        reason: "it holds a NUL character, which PostgreSQL's text cannot store")
    }
    return key
  }
}
