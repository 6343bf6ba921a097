import Foundation
import Instrumentation
import Logging
import PostgresNIO

/// The loop behind `run(concurrency:handler:)`: claim due bursts while a slot is free, run each
/// one in its own job, sleep until the earliest deadline (or a NOTIFY, or the safety poll), and
/// on cancellation claim nothing more and wait for the jobs in flight. Beside it, one task
/// renews the leases of all its runs, one listens for wake-ups, and one samples the gauges.
struct Worker<Value: Codable & Sendable>: Sendable {
  let queue: PostgresDelayedPreemptiveQueue<Value>
  let concurrency: Int
  let handler: RunHandler<Value>
  let owner: String
  let completions: CompletionBatcher<Value>
  let leases = LeaseBook()
  /// Rung when a run's end is recorded: the pending gauge is sampled again.
  let runEnded = Doorbell()
  /// The claim loop's own connection, for when the pool cannot lease one promptly (see
  /// ``SpareConnection``); nil for a queue made without its client's configuration.
  let spare: SpareConnection?
  let logger: Logger

  init(
    queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int,
    handler: RunHandler<Value>, owner: String
  ) {
    self.queue = queue
    self.concurrency = concurrency
    self.handler = handler
    self.owner = owner
    self.completions = CompletionBatcher(queue: queue)
    self.spare = SpareConnection(configuration: queue.probe?.configuration)
    var logger = queue.logger
    logger[metadataKey: "dpd.worker"] = "\(owner)"
    self.logger = logger
  }

  private enum Event: Sendable {
    case finished(UUID)
    case woke
  }

  func run() async throws {
    logger.info("worker started", metadata: ["dpd.concurrency": "\(concurrency)"])
    let doorbell = Doorbell()
    // Unstructured, so that a call the driver does not end cannot hold up the worker's return.
    let listener = Task { await listen(ringing: doorbell) }
    let renewer = Task { await renewLeases() }
    let sampler = Task { await sampleGauges() }
    defer {
      listener.cancel()
      renewer.cancel()
      sampler.cancel()
    }
    do {
      try await claimLoop(doorbell: doorbell)
    } catch {
      await spare?.close()
      throw error
    }
    await spare?.close()
    logger.info("worker stopped")
  }

  /// What the claim loop carries from one claim to the next.
  private struct ClaimState {
    /// The claims of the jobs in flight: every claim this worker knows it holds.
    var running = Set<UUID>()
    /// The last claim got all it asked for, so more is probably due.
    var backlog = false
    /// A claim statement whose answer was lost may have claimed rows that this worker does not
    /// know of: until this instant, every claim first releases such rows. The window outlasts
    /// `connectionTimeout`, so that a statement the server ran late is swept too; past it, the
    /// lease still ends such a claim.
    var releaseUnknownUntil: ContinuousClock.Instant?
  }

  /// Claims and starts jobs until cancelled (or an error that retrying cannot heal), then waits
  /// for the jobs in flight, and releases any claim of this worker that it never learnt of.
  /// Rethrows that error after the wait.
  private func claimLoop(doorbell: Doorbell) async throws {
    var failure: (any Error)?
    var outage = Outage(
      what: "claiming", statement: "claim", cap: queue.outageBackoff, logger: logger)
    var state = ClaimState()
    await withTaskGroup(of: Event.self) { group in
      var sleeping = false
      while true {
        if !Task.isCancelled && failure == nil {
          var wait: Duration?
          do {
            wait = try await claimAndStart(&state, group: &group, outage: outage.isOngoing)
            outage.ended()
          } catch let error as PostgresDelayedPreemptiveQueueError where error.isPermanent {
            logger.error("worker stops: \(error)")
            failure = error
          } catch {
            wait = outage.failed(error, defects: queue.metrics)
          }
          if let wait, !sleeping {
            sleeping = true
            group.addTask {
              await doorbell.wait(timeout: wait)
              return .woke
            }
          }
        }
        if (Task.isCancelled || failure != nil) && state.running.isEmpty { break }
        switch await group.next() {
        case .finished(let claim): state.running.remove(claim)
        case .woke: sleeping = false
        case nil: break
        }
      }
      group.cancelAll()
    }
    if state.releaseUnknownUntil != nil {
      do {
        _ = try await releaseUnknownClaims(known: [], spare: spareUse(outage: outage.isOngoing))
      } catch {
        // Nothing is lost: such a claim runs again once its lease has passed.
        let message =
          "could not release claims whose answer was lost at shutdown; they run again after "
          + "their lease: \(error)"
        logger.warning("\(message)")
      }
    }
    if let failure { throw failure }
  }

  /// Claims what the free slots allow and starts a job for each. Returns how long to sleep
  /// before looking again, or nil when it should look again as soon as a job finishes.
  ///
  /// `backlog` says that the last claim got all it asked for, so more is probably due: then a
  /// busy worker waits until a quarter of its slots are free and claims them together, rather
  /// than one row per finished job. Without a backlog it claims for any free slot at once.
  ///
  /// During an outage (`outage`), each call also asks the spare connection at once; otherwise
  /// only when the pool has no connection for it within ``spareDelay``.
  private func claimAndStart(
    _ state: inout ClaimState, group: inout TaskGroup<Event>, outage: Bool
  ) async throws -> Duration? {
    let viaSpare = spareUse(outage: outage)
    let free = concurrency - state.running.count
    guard free > 0, !state.backlog || state.running.isEmpty || free >= max(1, concurrency / 4)
    else {
      return nil
    }
    if let until = state.releaseUnknownUntil {
      _ = try await releaseUnknownClaims(known: Array(state.running), spare: viaSpare)
      if ContinuousClock.now >= until { state.releaseUnknownUntil = nil }
    }
    let sentAt = ContinuousClock.now
    let claimed: [ClaimedBurst]
    do {
      claimed = try await uncancelled { [queue, owner] in
        try await queue.claim(limit: free, owner: owner, spare: viaSpare)
      }
    } catch {
      if case .databaseUnreachable? = error as? PostgresDelayedPreemptiveQueueError {
        throw error  // never sent: nothing was claimed
      }
      state.releaseUnknownUntil = ContinuousClock.now + queue.connectionTimeout * 2
      throw error
    }
    state.backlog = claimed.count == free
    for burst in claimed {
      if burst.exhausted || burst.gaveWay {
        queue.metrics.failed.increment()
        let message =
          "burst kept as failed: its last run never ended (its worker died or lost the lease)"
          + (burst.gaveWay ? "; the next burst of its key runs as usual" : "")
        logger.warning("\(message)", metadata: ["dpd.attempts": "\(burst.attempt)"])
        logger.debug("kept failure", metadata: ["dpd.key": "\(burst.key)"])
        continue
      }
      if burst.takenOver {
        queue.metrics.takeovers.increment()
        logger.warning(
          "took over a burst whose lease ran out", metadata: ["dpd.attempt": "\(burst.attempt)"])
        logger.debug("took over", metadata: ["dpd.key": "\(burst.key)"])
      }
      state.running.insert(burst.claim)
      leases.add(burst.claim, expiry: sentAt + queue.lease)
      let job = Task { await perform(burst, claimedAt: sentAt) }
      group.addTask {
        await job.value
        return .finished(burst.claim)
      }
    }
    if claimed.count == free { return state.running.count < concurrency ? .zero : nil }
    let untilDue = try await uncancelled { [queue] in
      try await queue.millisecondsUntilDue(spare: viaSpare)
    }
    let sleep = untilDue.map { Duration.milliseconds(max(0, $0)) } ?? queue.safetyPoll
    return min(sleep, queue.safetyPoll)
  }

  /// Releases the rows this worker claimed without learning of it (see
  /// ``ReleaseUnknownClaimsStatement``), so that they run at once rather than after their lease.
  private func releaseUnknownClaims(
    known: [UUID], spare: (connection: SpareConnection, after: Duration)?
  ) async throws -> [String] {
    let released = try await uncancelled { [queue, owner] in
      try await queue.releaseUnknownClaims(owner: owner, known: known, spare: spare)
    }
    if !released.isEmpty {
      logger.notice(
        "released \(released.count) claims whose answer was lost; they run again at once")
      logger.debug("released unknown claims", metadata: ["dpd.keys": "\(released)"])
    }
    return released
  }

  /// How long a call of the claim loop waits for the pool before it also asks the spare
  /// connection, outside an outage: a pool that every handler keeps busy costs a claim no more.
  static var spareDelay: Duration { .milliseconds(200) }

  /// The spare connection for the claim loop's next call: asked at once during an outage (the
  /// pool may be backing off), else after ``spareDelay``.
  private func spareUse(outage: Bool) -> (connection: SpareConnection, after: Duration)? {
    spare.map { ($0, outage ? .zero : Self.spareDelay) }
  }

  /// Runs one claimed burst in a task of its own, which is cancelled if the lease is lost, and
  /// records the end while the lease still holds, with the handler's start (from which
  /// `minimumSpacing` counts). The run's span (``RunSpan``) is current while the handler runs,
  /// so that the handler's own spans are its children.
  private func perform(_ burst: ClaimedBurst, claimedAt: ContinuousClock.Instant) async {
    var burst = burst
    let span = RunSpan.start(for: burst, queue: queue.name, tracer: queue.tracerInUse)
    let result: Result<RunEnd, any Error>
    let spanError: (any Error)?
    do {
      let value = try ValueCodec.decode(Value.self, from: burst.json, key: burst.key)
      let run = PostgresBurstRun(
        key: burst.key, value: value, attempt: burst.attempt, fence: burst.fence)
      let started = ContinuousClock.now
      burst.handlerStarted = started
      queue.metrics.lateness.recordNanoseconds(
        Int64(max(0, burst.latenessMilliseconds) * 1e6)
          + (started - claimedAt).nanoseconds)
      let handler = handler
      let context = span.context
      let claimed = burst
      let task = Task { () async throws -> RunEnd in
        try await ServiceContext.$current.withValue(context) {
          switch handler {
          case .plain(let body):
            try await body(run)
            return .returned
          case .transactional(let body):
            return try await transactional(run, of: claimed, body)
          }
        }
      }
      leases.attach(burst.claim) { task.cancel() }
      result = await task.result
      queue.metrics.runDuration.recordNanoseconds((ContinuousClock.now - started).nanoseconds)
      if case .failure(let error) = result { spanError = error } else { spanError = nil }
    } catch {
      // Retrying cannot make a stored value decode: it is kept as a failure at once (P15).
      burst.valueDoesNotDecode = true
      result = .failure(error)
      spanError = RunSpan.ValueNotDecodable()
    }
    RunSpan.end(span, recording: spanError)
    await record(result, of: burst)
    leases.remove(burst.claim)
    await runEnded.ring()
  }

  /// Records the end of a run, retrying while the database cannot be reached. The database
  /// decides whether the run still holds its claim (an end recorded under a claim that was
  /// taken over matches nothing); a run whose handler was cancelled because its lease was lost
  /// records nothing, and retries stop, counting the run as lost, once the lease has run out.
  ///
  /// Every attempt is safe after an earlier one that was applied but not confirmed: the claim
  /// it names is gone then, so the retry matches nothing. A statement that the database refuses
  /// for any other reason than an outage or a conflict is a defect: it is logged at error level
  /// and counted, and not retried; the run's lease then runs out, and the burst runs again.
  private func record(_ result: Result<RunEnd, any Error>, of burst: ClaimedBurst) async {
    switch result {
    case .success(.committed):
      queue.metrics.succeeded.increment()
      return
    case .success(.stale):
      return leaseLost(burst)
    case .success(.commitUnconfirmed):
      return notRecorded(burst, unconfirmed: true)
    case .success(.returned), .failure:
      break
    }
    var outage = Outage(
      what: "recording a run's end", statement: "complete", cap: queue.outageBackoff, logger: logger
    )
    if case .failure = result, leases.isLost(burst.claim) {
      leaseLost(burst)
      return
    }
    var unconfirmed = false
    while true {
      do {
        switch result {
        case .success:
          if try await completions.succeeded(burst) {
            queue.metrics.succeeded.increment()
          } else {
            notRecorded(burst, unconfirmed: unconfirmed)
          }
        case .failure(let error):
          let kept = try await uncancelled { [queue] in try await queue.failed(burst, error: error)
          }
          recordedFailure(kept, of: burst, error: error, unconfirmed: unconfirmed)
        }
        outage.ended()
        return
      } catch let error as PostgresDelayedPreemptiveQueueError
        where error.kind != .outage && error.kind != .conflict
      {
        let statement = result.isSuccess ? "complete" : "recordFailure"
        defect(error, in: statement, of: burst)
        return
      } catch {
        if (error as? PostgresDelayedPreemptiveQueueError)?.isUnconfirmed == true {
          unconfirmed = true
        }
        let wait = outage.failed(error, defects: queue.metrics)
        if leases.isLost(burst.claim) {
          leaseLost(burst)
          return
        }
        do {
          try await Task.sleep(for: wait)
        } catch {
          return
        }
      }
    }
  }

  /// Logs and counts what became of a run that threw.
  private func recordedFailure(
    _ kept: FailedStatement.Outcome?, of burst: ClaimedBurst, error: any Error, unconfirmed: Bool
  ) {
    switch kept {
    case nil: notRecorded(burst, unconfirmed: unconfirmed)
    case .gaveWay?:
      queue.metrics.retried.increment()
      logger.info(
        "handler threw; the later burst of its key, with a newer value, runs next: \(error)",
        metadata: ["dpd.attempt": "\(burst.attempt)"])
      logger.debug("gave way", metadata: ["dpd.key": "\(burst.key)"])
    case .kept?:
      queue.metrics.failed.increment()
      logger.warning(
        "burst kept as failed after \(burst.attempt) runs: \(error)",
        metadata: ["dpd.attempts": "\(burst.attempt)"])
      logger.debug("kept failure", metadata: ["dpd.key": "\(burst.key)"])
    case .retried?:
      queue.metrics.retried.increment()
      logger.info(
        "handler threw; retrying with backoff: \(error)",
        metadata: ["dpd.attempt": "\(burst.attempt)"])
      logger.debug("retry", metadata: ["dpd.key": "\(burst.key)"])
    }
  }

  /// The end's statement matched no row under the run's claim: the claim was taken over, or an
  /// earlier attempt whose answer was lost recorded the end.
  private func notRecorded(_ burst: ClaimedBurst, unconfirmed: Bool) {
    guard unconfirmed else { return leaseLost(burst) }
    queue.metrics.unconfirmed.increment()
    let message =
      "a run's end was not confirmed: an earlier attempt whose answer was lost recorded it, or "
      + "the burst was taken over meanwhile"
    logger.info("\(message)", metadata: ["dpd.attempt": "\(burst.attempt)"])
    logger.debug("end unconfirmed", metadata: ["dpd.key": "\(burst.key)"])
  }

  /// A statement about one run that the database refused for a reason retrying cannot heal.
  private func defect(
    _ error: PostgresDelayedPreemptiveQueueError, in statement: String, of burst: ClaimedBurst
  ) {
    queue.metrics.defect(in: statement)
    let message =
      "the database refused \(statement), a defect of this package: \(error); the run's end is "
      + "not recorded, and its burst runs again once its lease runs out"
    logger.error(
      "\(message)",
      metadata: ["dpd.statement": "\(statement)", "dpd.attempt": "\(burst.attempt)"])
    logger.debug("defect", metadata: ["dpd.key": "\(burst.key)"])
  }

  private func leaseLost(_ burst: ClaimedBurst) {
    queue.metrics.leaseLost.increment()
    logger.warning(
      "lease lost: the run was cancelled and its end not recorded; it runs again elsewhere",
      metadata: ["dpd.attempt": "\(burst.attempt)"])
    logger.debug("lease lost", metadata: ["dpd.key": "\(burst.key)"])
  }

  /// Renews every held lease once per third of `lease`, in one statement; marks as lost the
  /// leases that a renewal did not return or whose time passed without one. The renewal runs
  /// beside the loop, so that a slow answer does not delay the expiry checks.
  private func renewLeases() async {
    let interval = queue.lease / 3
    let outage = Locked(
      Outage(what: "renewing leases", statement: "renew", cap: queue.outageBackoff, logger: logger))
    let renewing = Locked(false)
    while true {
      do {
        try await Task.sleep(for: interval)
      } catch {
        return
      }
      leases.expire()
      let claims = leases.held()
      // One renewal at a time: a slow one is not stacked on.
      guard !claims.isEmpty, renewing.withLock({ $0.claimIfFree() }) else { continue }
      let sentAt = ContinuousClock.now
      Task { [queue, leases] in
        defer { renewing.withLock { $0 = false } }
        do {
          let renewed = try await queue.renew(claims)
          leases.renewed(claims, renewed: Set(renewed), sentAt: sentAt, lease: queue.lease)
          outage.withLock { $0.ended() }
        } catch {
          // Not renewed: the leases run out here unless a later renewal gets through.
          _ = outage.withLock { $0.failed(error, defects: queue.metrics) }
        }
      }
    }
  }

  /// Samples `dpd.postgres.pending` and `dpd.postgres.overdue.age` when the worker starts, soon
  /// after its own runs end (at most five times a second, so that a busy worker does not count
  /// the queue's rows for each run), and at least every five seconds.
  private func sampleGauges() async {
    let spacing = Duration.milliseconds(200)
    while !Task.isCancelled {
      do {
        let (pending, overdue) = try await queue.gauges()
        queue.metrics.pending.record(pending)
        queue.metrics.overdueAge.record(overdue)
      } catch {
        logger.debug("could not sample the gauges: \(error)")
      }
      do {
        try await Task.sleep(for: spacing)
      } catch {
        return
      }
      await runEnded.wait(timeout: .seconds(5) - spacing)
    }
  }

  /// Listens for wake-ups of this queue; reconnects after an error until cancelled.
  private func listen(ringing doorbell: Doorbell) async {
    var outage = Outage(
      what: "listening for wake-ups", statement: "listen", cap: queue.outageBackoff, logger: logger)
    while !Task.isCancelled {
      do {
        try await queue.client.withConnection { connection in
          try await connection.listen(on: SQLFragment.wakeChannel) { notifications in
            await doorbell.ring()  // anything due meanwhile is found by the next claim
            outage.ended()
            for try await notification in notifications where notification.payload == queue.name {
              await doorbell.ring()
            }
          }
        }
      } catch {
        if Task.isCancelled { return }
        let wait = outage.failed(queue.failure(of: "listen", error), defects: queue.metrics)
        do {
          try await Task.sleep(for: max(wait, queue.safetyPoll))
        } catch {
          return
        }
      }
    }
  }
}

/// One loop's view of an outage: a backoff that starts at 100 ms and doubles up to `cap`, a
/// warning when the outage starts and a notice when it ends. An error that is no outage (the
/// database refused the statement for its data, or for another reason that waiting cannot heal)
/// is a defect: it is logged at error level, each time, and counted, and waits the same backoff.
struct Outage {
  let what: String
  /// The label of the statement the loop sends, for the defects metric.
  let statement: String
  let cap: Duration
  let logger: Logger
  private var backoff: Duration?
  private var started: ContinuousClock.Instant?

  /// Whether the loop is in an outage: a call failed for it, and none succeeded since.
  var isOngoing: Bool { started != nil }

  init(what: String, statement: String, cap: Duration, logger: Logger) {
    self.what = what
    self.statement = statement
    self.cap = cap
    self.logger = logger
  }

  /// Returns how long to wait before the next try.
  mutating func failed(_ error: any Error, defects: QueueMetrics) -> Duration {
    let kind = (error as? PostgresDelayedPreemptiveQueueError)?.kind ?? .outage
    if kind != .outage && kind != .conflict {
      defects.defect(in: statement)
      logger.error(
        "the database refused \(statement) while \(what), a defect of this package: \(error)",
        metadata: ["dpd.statement": "\(statement)"])
    } else if started == nil {
      started = .now
      logger.warning("database unavailable while \(what); retrying: \(error)")
    } else {
      logger.debug("still unavailable while \(what): \(error)")
    }
    let next = min((backoff ?? .milliseconds(50)) * 2, cap)
    backoff = next
    return next
  }

  mutating func ended() {
    guard let started else { return }
    logger.notice("database available again for \(what) after \(ContinuousClock.now - started)")
    self.started = nil
    backoff = nil
  }
}

extension Result {
  var isSuccess: Bool {
    if case .success = self { return true }
    return false
  }
}

extension Bool {
  /// Sets a free flag (false) to busy and returns true; returns false if it was busy already.
  fileprivate mutating func claimIfFree() -> Bool {
    if self { return false }
    self = true
    return true
  }
}

extension Duration {
  var nanoseconds: Int64 {
    let (seconds, attoseconds) = components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }
}

/// Runs `operation` in a task that the caller's cancellation does not reach, so that the
/// database calls of a worker that is shutting down still complete. Every call it wraps is
/// bounded by the queue's `connectionTimeout`.
func uncancelled<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result)
  async throws -> Result
{
  try await Task { try await operation() }.value
}
