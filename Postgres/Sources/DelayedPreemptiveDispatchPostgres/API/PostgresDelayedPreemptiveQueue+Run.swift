@_spi(Preconditions) import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO

extension PostgresDelayedPreemptiveQueue {
  /// Works until the calling task is cancelled: claims due bursts and runs `handler` with each
  /// one's ``PostgresBurstRun`` (key, last value, attempt, fence), at most `concurrency` at
  /// once. On cancellation it claims nothing more, lets running handlers finish (they are not
  /// cancelled), runs the rows it claimed ahead of its free slots, and returns. While a backlog
  /// lasts, and handlers are quick against a claim's round trip, it claims up to twice
  /// `concurrency` rows ahead, so that a slot that frees finds one waiting.
  ///
  /// Handlers run in tasks of their own, concurrently for different keys. While a handler runs,
  /// and until its end is recorded, its lease is renewed every third of `lease`, in one
  /// statement for all the runs of this worker. Runs of one key never overlap while every
  /// replica reaches the database within its lease. When this worker cannot renew a lease
  /// (another replica took the burst over, or the database could not be reached for what was
  /// left of the lease, or this process was paused), it cancels that handler's task as soon as
  /// it learns of it, at the latest one renewal interval after it can run again, and logs a
  /// warning; an end is written only under the run's own claim, so once another replica has
  /// claimed the burst, the stale run records nothing, and the burst runs again there. A
  /// handler makes its writes elsewhere safe against such a stale run with
  /// ``PostgresBurstRun/fence``.
  ///
  /// Every claim counts as an attempt. A handler that throws is retried after
  /// `retryBackoff`, doubling each time; a burst that had `maxAttempts` runs without success
  /// (thrown, or never ended because its worker died or lost the lease) is kept in
  /// ``failures()``.
  ///
  /// Each run is a span of swift-distributed-tracing's global tracer, of kind `.consumer` and
  /// named `"<queue name> process"`, linked to the trace contexts stored with the burst's
  /// submissions and current while the handler runs; a handler's error is recorded on it
  /// (<doc:OperatingAQueue#Turn-tracing-on>).
  ///
  /// The worker sleeps until the earliest deadline it knows of. A submission that makes the
  /// earliest deadline earlier, a ``flush(_:)`` that finds a pending burst and a
  /// ``retryFailure(_:)`` that finds a kept failure wake it through LISTEN/NOTIFY; `safetyPoll`
  /// bounds the sleep in case a wake-up is missed.
  ///
  /// Outages: a database restart, a failover or dropped connections never end `run`.
  /// Claims, renewals, completions and LISTEN retry with a backoff that doubles up to
  /// `outageBackoff`, and the worker resumes by itself once the database is back; a completion
  /// that could not be written is retried until the run's lease runs out, and then the run is
  /// treated as lost. It throws only for what retrying cannot heal, after the handlers in
  /// flight have finished: ``PostgresDelayedPreemptiveQueueError/newerSchema(found:supported:)``,
  /// and ``PostgresDelayedPreemptiveQueueError/databaseError(operation:sqlState:reason:)`` for
  /// a schema that was never migrated (`42883` or `42P01`) or a missing permission (`42501`). A connection
  /// refused for its password or database name is retried like an outage, and logged with the
  /// server's reason, so that an operator can fix it while the worker waits.
  ///
  /// ```swift
  /// let worker = Task {
  ///   try await queue.run(concurrency: 8) { run in
  ///     try await index(run.key, run.value, fence: run.fence)
  ///   }
  /// }
  /// // on SIGTERM:
  /// worker.cancel()
  /// try await worker.value   // returns once the handlers in flight have finished
  /// ```
  public func run(
    concurrency: Int = 4,
    handler: @escaping @Sendable (PostgresBurstRun<Value>) async throws -> Void
  ) async throws {
    try await work(concurrency: concurrency, handler: .plain(handler))
  }

  /// Like ``run(concurrency:handler:)-(_,(PostgresBurstRun<Value>)->Void)``, but each run's
  /// handler gets a connection with a transaction open, and the run's end is written in that
  /// same transaction (rule P16): the handler's writes through `connection` and the end of the
  /// burst commit together or not at all. When the handler returns, the transaction commits only
  /// if the run's claim still holds the key (its fence is the current one); a stale run, whose
  /// lease was lost and whose burst another worker took over, is rolled back, so none of its
  /// writes land, without any fence column of yours. A handler that throws is rolled back and
  /// retried as a handler that throws always is. Effects in the same database are thereby
  /// applied exactly once per burst.
  ///
  /// ```swift
  /// try await queue.run(concurrency: 4) { run, connection in
  ///   try await connection.query(
  ///     "UPDATE search_index SET body = \(run.value.text) WHERE id = \(run.key)", logger: logger)
  /// }   // the index row and the end of the burst commit together
  /// ```
  ///
  /// Do not end the transaction in the handler (no `COMMIT` or `ROLLBACK`): the worker does. A
  /// `delay(_:for:value:on:)` made on `connection` commits with the run, so a run can hand work
  /// on exactly once.
  ///
  /// What a long transaction costs: each running handler holds one connection of the client's
  /// pool for its whole run, and the lease is renewed on others, so give the pool at least
  /// `concurrency` + 2 connections (claims, renewals and LISTEN need theirs). The rows that the
  /// handler writes stay locked until the run ends, so other writers of those rows wait for it;
  /// and a transaction that stays open holds back PostgreSQL's vacuum of every table, so keep
  /// runs short (seconds, not hours), and set `idle_in_transaction_session_timeout` to bound
  /// the damage of a paused worker. A paused (SIGSTOPped) worker's transaction stays open until
  /// it resumes or its session ends; its burst is taken over once its lease has passed, and
  /// when it resumes its transaction is rolled back.
  public func run(
    concurrency: Int = 4,
    transactionalHandler:
      @escaping @Sendable (PostgresBurstRun<Value>, PostgresConnection)
      async throws -> Void
  ) async throws {
    try await work(concurrency: concurrency, handler: .transactional(transactionalHandler))
  }

  /// The worker loop with either kind of handler.
  func work(concurrency: Int, handler: RunHandler<Value>) async throws {
    requireArgument(
      concurrency >= 1, "PostgresDelayedPreemptiveQueue.run: concurrency must be at least 1")
    let owner = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UUID().uuidString.prefix(8))"
    try await Worker(queue: self, concurrency: concurrency, handler: handler, owner: owner).run()
  }

  /// The same worker, for a handler that needs only the key and the burst's last value: a
  /// convenience over the handler that takes a ``PostgresBurstRun``.
  ///
  /// ```swift
  /// try await queue.run { documentID, edit in try await index(documentID, edit) }
  /// ```
  public func run(
    concurrency: Int = 4, handler: @escaping @Sendable (String, Value) async throws -> Void
  ) async throws {
    try await run(concurrency: concurrency) { (run: PostgresBurstRun<Value>) in
      try await handler(run.key, run.value)
    }
  }

  /// The claim loop's calls (`claim`, `nextDeadline`, `releaseUnknownClaims`) take the worker's
  /// spare connection, if it has one (see ``SpareConnection``).
  func claim(
    limit: Int, owner: String, spare: (connection: SpareConnection, after: Duration)? = nil
  ) async throws -> [ClaimedBurst] {
    let statement = ClaimStatement(
      name: name, limit: limit, owner: owner, leaseMilliseconds: lease.milliseconds,
      maxAttempts: maxAttempts, minimumSpacingMilliseconds: minimumSpacingMilliseconds)
    let logger = logger
    return try await database("claim", spare: spare) {
      try await $0.rows(statement, logger: logger)
    }
  }

  func millisecondsUntilDue(
    spare: (connection: SpareConnection, after: Duration)? = nil
  ) async throws -> Double? {
    let statement = NextDueStatement(name: name)
    let logger = logger
    return try await database("nextDeadline", spare: spare) {
      try await $0.rows(statement, logger: logger).first ?? nil
    }
  }

  /// Releases the claims that `owner` holds in the database beyond `known` (those of a claim
  /// whose answer was lost); returns their keys.
  func releaseUnknownClaims(
    owner: String, known: [UUID], spare: (connection: SpareConnection, after: Duration)? = nil
  ) async throws -> [String] {
    let statement = ReleaseUnknownClaimsStatement(name: name, owner: owner, known: known)
    let logger = logger
    return try await database("releaseUnknownClaims", spare: spare) {
      try await $0.rows(statement, logger: logger)
    }
  }

  /// Renews the leases of `claims`; returns those it renewed.
  func renew(_ claims: [UUID]) async throws -> [UUID] {
    let statement = RenewStatement(
      name: name, claims: claims, leaseMilliseconds: lease.milliseconds,
      minimumSpacingMilliseconds: minimumSpacingMilliseconds)
    let logger = logger
    return try await database("renew") { try await $0.rows(statement, logger: logger) }
  }

  /// Records the ends of successful runs; returns the claims whose end was recorded (the
  /// others were taken over). Not cancellable: the runs of a batch wait for it in other tasks,
  /// and a run's end is written whatever becomes of the task that writes it (a stopping
  /// worker's run writes its own end when no batch is in flight; `connectionTimeout` bounds it).
  func succeeded(_ bursts: [ClaimedBurst]) async throws -> [UUID] {
    let statement = SucceededStatement(
      name: name, keys: bursts.map(\.key), claims: bursts.map(\.claim),
      minimumSpacingMilliseconds: minimumSpacingMilliseconds,
      millisecondsSinceHandlerStarts: bursts.map(\.millisecondsSinceHandlerStart))
    let logger = logger
    return try await database("complete", cancellable: false) {
      try await $0.rows(statement, logger: logger)
    }
  }

  /// Records the end of a run that threw: returns what became of the burst, or nil when the
  /// claim was taken over and nothing was recorded.
  func failed(_ burst: ClaimedBurst, error: any Error) async throws -> FailedStatement.Outcome? {
    var lastError = Self.storedErrorText(error)
    if burst.valueDoesNotDecode,
      case .valueNotDecodable(_, let reason)? = error as? PostgresDelayedPreemptiveQueueError
    {
      lastError = Self.storedErrorText(
        "the stored value does not decode as \(Value.self): \(reason)")
    }
    let statement = FailedStatement(
      name: name, key: burst.key, claim: burst.claim,
      maxAttempts: burst.valueDoesNotDecode ? 1 : maxAttempts,
      backoffMilliseconds: retryBackoff.milliseconds, error: lastError,
      append: merge == .append, minimumSpacingMilliseconds: minimumSpacingMilliseconds,
      millisecondsSinceHandlerStart: burst.millisecondsSinceHandlerStart)
    let logger = logger
    return try await database("recordFailure") {
      try await $0.rows(statement, logger: logger).first
    }
  }

  /// A handler's error as `last_error` keeps it: its description, without NUL characters (which
  /// PostgreSQL's text refuses, so that the statement would fail on every retry) and cut to
  /// 4,096 characters.
  static func storedErrorText(_ error: Any) -> String {
    var text = String(describing: error).replacingOccurrences(of: "\0", with: "\\0")
    if text.count > 4096 { text = String(text.prefix(4095)) + "…" }
    return text
  }

  /// Bursts not finished, and seconds since the deadline of the oldest due one not claimed.
  func gauges() async throws -> (pending: Int, overdueSeconds: Double) {
    let statement = GaugesStatement(name: name)
    let logger = logger
    return try await database("gauges") { connection in
      try await connection.rows(statement, logger: logger).first ?? (0, 0)
    }
  }
}
