import Foundation
import Logging
import PostgresNIO

/// The loop behind `run(concurrency:handler:)`: claim due bursts while a slot is free, run each
/// one in its own job, sleep until the earliest deadline (or a NOTIFY, or the safety poll), and
/// on cancellation claim nothing more and wait for the jobs in flight. Beside it, one task
/// renews the leases of all its runs, one listens for wake-ups, and one samples the gauges.
struct Worker<Value: Codable & Sendable>: Sendable {
  let queue: PostgresDelayedPreemptiveQueue<Value>
  let concurrency: Int
  let handler: @Sendable (PostgresBurstRun<Value>) async throws -> Void
  let owner: String
  let completions: CompletionBatcher<Value>
  let leases = LeaseBook()
  let logger: Logger

  init(
    queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int,
    handler: @escaping @Sendable (PostgresBurstRun<Value>) async throws -> Void, owner: String
  ) {
    self.queue = queue
    self.concurrency = concurrency
    self.handler = handler
    self.owner = owner
    self.completions = CompletionBatcher(queue: queue)
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
    try await claimLoop(doorbell: doorbell)
    logger.info("worker stopped")
  }

  /// Claims and starts jobs until cancelled (or an error that retrying cannot heal), then waits
  /// for the jobs in flight. Rethrows that error after the wait.
  private func claimLoop(doorbell: Doorbell) async throws {
    var failure: (any Error)?
    var outage = Outage(what: "claiming", cap: queue.outageBackoff, logger: logger)
    await withTaskGroup(of: Event.self) { group in
      var running = Set<UUID>()
      var sleeping = false
      var backlog = false
      while true {
        if !Task.isCancelled && failure == nil {
          var wait: Duration?
          do {
            wait = try await claimAndStart(running: &running, backlog: &backlog, group: &group)
            outage.ended()
          } catch let error as PostgresDelayedPreemptiveQueueError where error.isPermanent {
            logger.error("worker stops: \(error)")
            failure = error
          } catch {
            wait = outage.failed(error)
          }
          if let wait, !sleeping {
            sleeping = true
            group.addTask {
              await doorbell.wait(timeout: wait)
              return .woke
            }
          }
        }
        if (Task.isCancelled || failure != nil) && running.isEmpty { break }
        switch await group.next() {
        case .finished(let claim): running.remove(claim)
        case .woke: sleeping = false
        case nil: break
        }
      }
      group.cancelAll()
    }
    if let failure { throw failure }
  }

  /// Claims what the free slots allow and starts a job for each. Returns how long to sleep
  /// before looking again, or nil when it should look again as soon as a job finishes.
  ///
  /// `backlog` says that the last claim got all it asked for, so more is probably due: then a
  /// busy worker waits until a quarter of its slots are free and claims them together, rather
  /// than one row per finished job. Without a backlog it claims for any free slot at once.
  private func claimAndStart(
    running: inout Set<UUID>, backlog: inout Bool, group: inout TaskGroup<Event>
  ) async throws -> Duration? {
    let free = concurrency - running.count
    guard free > 0, !backlog || running.isEmpty || free >= max(1, concurrency / 4) else {
      return nil
    }
    let sentAt = ContinuousClock.now
    let claimed = try await uncancelled { [queue, owner] in
      try await queue.claim(limit: free, owner: owner)
    }
    backlog = claimed.count == free
    for burst in claimed {
      if burst.gaveWay {
        queue.metrics.failed.increment()
        let message =
          "burst dropped: its last run never ended (its worker died or lost the lease) and a "
          + "later burst of its key runs next"
        logger.warning("\(message)", metadata: ["dpd.attempts": "\(burst.attempt)"])
        logger.debug("dropped", metadata: ["dpd.key": "\(burst.key)"])
        continue
      }
      if burst.exhausted {
        queue.metrics.failed.increment()
        logger.warning(
          "burst kept as failed: its last run never ended (its worker died or lost the lease)",
          metadata: ["dpd.attempts": "\(burst.attempt)"])
        logger.debug("kept failure", metadata: ["dpd.key": "\(burst.key)"])
        continue
      }
      if burst.takenOver {
        queue.metrics.takeovers.increment()
        logger.warning(
          "took over a burst whose lease ran out", metadata: ["dpd.attempt": "\(burst.attempt)"])
        logger.debug("took over", metadata: ["dpd.key": "\(burst.key)"])
      }
      running.insert(burst.claim)
      leases.add(burst.claim, expiry: sentAt + queue.lease)
      let job = Task { await perform(burst, claimedAt: sentAt) }
      group.addTask {
        await job.value
        return .finished(burst.claim)
      }
    }
    if claimed.count == free { return running.count < concurrency ? .zero : nil }
    let untilDue = try await uncancelled { [queue] in try await queue.millisecondsUntilDue() }
    let sleep = untilDue.map { Duration.milliseconds(max(0, $0)) } ?? queue.safetyPoll
    return min(sleep, queue.safetyPoll)
  }

  /// Runs one claimed burst in a task of its own, which is cancelled if the lease is lost, and
  /// records the end while the lease still holds.
  private func perform(_ burst: ClaimedBurst, claimedAt: ContinuousClock.Instant) async {
    let result: Result<Void, any Error>
    do {
      let value = try ValueCodec.decode(Value.self, from: burst.json, key: burst.key)
      let run = PostgresBurstRun(
        key: burst.key, value: value, attempt: burst.attempt, fence: burst.fence)
      let started = ContinuousClock.now
      queue.metrics.lateness.recordNanoseconds(
        Int64(max(0, burst.latenessMilliseconds) * 1e6)
          + (started - claimedAt).nanoseconds)
      let handler = handler
      let task = Task { try await handler(run) }
      leases.attach(burst.claim) { task.cancel() }
      result = await task.result
      queue.metrics.runDuration.recordNanoseconds((ContinuousClock.now - started).nanoseconds)
    } catch {
      result = .failure(error)
    }
    await record(result, of: burst)
    leases.remove(burst.claim)
  }

  /// Records the end of a run, retrying while the database cannot be reached. The database
  /// decides whether the run still holds its claim (an end recorded under a claim that was
  /// taken over matches nothing); a run whose handler was cancelled because its lease was lost
  /// records nothing, and retries stop, counting the run as lost, once the lease has run out.
  private func record(_ result: Result<Void, any Error>, of burst: ClaimedBurst) async {
    var outage = Outage(what: "recording a run's end", cap: queue.outageBackoff, logger: logger)
    if case .failure = result, leases.isLost(burst.claim) {
      leaseLost(burst)
      return
    }
    while true {
      do {
        switch result {
        case .success:
          if try await completions.succeeded(burst) {
            queue.metrics.succeeded.increment()
          } else {
            leaseLost(burst)
          }
        case .failure(let error):
          let kept = try await uncancelled { [queue] in try await queue.failed(burst, error: error)
          }
          switch kept {
          case nil: leaseLost(burst)
          case .gaveWay? where burst.attempt >= queue.maxAttempts:
            queue.metrics.failed.increment()
            let message =
              "burst dropped after \(burst.attempt) runs: \(error); a later burst of its key "
              + "runs next, so it is not kept"
            logger.warning("\(message)", metadata: ["dpd.attempts": "\(burst.attempt)"])
            logger.debug("dropped", metadata: ["dpd.key": "\(burst.key)"])
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
        outage.ended()
        return
      } catch {
        let wait = outage.failed(error)
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
    let outage = Locked(Outage(what: "renewing leases", cap: queue.outageBackoff, logger: logger))
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
          _ = outage.withLock { $0.failed(error) }
        }
      }
    }
  }

  /// Samples `dpd.postgres.pending` and `dpd.postgres.overdue.age` every five seconds.
  private func sampleGauges() async {
    while !Task.isCancelled {
      do {
        let (pending, overdue) = try await queue.gauges()
        queue.metrics.pending.record(pending)
        queue.metrics.overdueAge.record(overdue)
      } catch {
        logger.debug("could not sample the gauges: \(error)")
      }
      do {
        try await Task.sleep(for: .seconds(5))
      } catch {
        return
      }
    }
  }

  /// Listens for wake-ups of this queue; reconnects after an error until cancelled.
  private func listen(ringing doorbell: Doorbell) async {
    var outage = Outage(what: "listening for wake-ups", cap: queue.outageBackoff, logger: logger)
    while !Task.isCancelled {
      do {
        try await queue.client.withConnection { connection in
          try await connection.listen(on: wakeChannel) { notifications in
            await doorbell.ring()  // anything due meanwhile is found by the next claim
            outage.ended()
            for try await notification in notifications where notification.payload == queue.name {
              await doorbell.ring()
            }
          }
        }
      } catch {
        if Task.isCancelled { return }
        let wait = outage.failed(error)
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
/// warning when the outage starts and a notice when it ends.
struct Outage {
  let what: String
  let cap: Duration
  let logger: Logger
  private var backoff: Duration?
  private var started: ContinuousClock.Instant?

  init(what: String, cap: Duration, logger: Logger) {
    self.what = what
    self.cap = cap
    self.logger = logger
  }

  /// Returns how long to wait before the next try.
  mutating func failed(_ error: any Error) -> Duration {
    if started == nil {
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
