import Foundation
import Instrumentation
import NIOCore

extension Worker {
  /// Runs one claimed burst: its handler in a task of its own, which is cancelled if the lease
  /// is lost (and never by the cancellation of the task that calls this, a stopping worker's), and
  /// records the end while the lease still holds, with the handler's start (from which
  /// `minimumSpacing` counts). The run's span (``RunSpan``) is current while the handler runs,
  /// so that the handler's own spans are its children.
  func perform(_ burst: ClaimedBurst, claimedAt: ContinuousClock.Instant) async {
    var burst = burst
    let span = RunSpan.start(for: burst, queue: name, tracer: tracerInUse)
    let result: Result<RunEnd, any Error>
    let spanError: (any Error)?
    do {
      let value = try ValueCodec.decode(Value.self, from: burst.json, key: burst.key)
      let run = PostgresBurstRun(
        key: burst.key, value: value, attempt: burst.attempt, fence: burst.fence)
      let started = ContinuousClock.now
      burst.handlerStarted = started
      metrics.lateness.recordNanoseconds(
        Int64(max(0, burst.latenessMilliseconds) * 1e6)
          + (started - claimedAt).nanoseconds)
      let handler = handler
      let context = span.context
      let claimed = burst
      let watch = RunWatch()
      let task = Task {
        do {
          let end = try await ServiceContext.$current.withValue(context) { () -> RunEnd in
            switch handler {
            case .plain(let body):
              try await body(run)
              return .returned
            case .transactional(let body):
              return try await transactional(run, of: claimed, watch: watch, body)
            }
          }
          watch.ended(.success(end))
        } catch {
          watch.ended(.failure(error))
        }
      }
      // A run given up (past `runTimeout`, or its lease lost) is cancelled, and no longer waited
      // for once ``abandonGrace`` more has passed (``RunWatch``).
      let timers = callTimers
      let grace = abandonGraceOfLease
      leases.attach(burst.claim) {
        watch.giveUp(.leaseLost, grace: grace, timers: timers) { task.cancel() }
      }
      let timeout = runTimeout.map { limit in
        timers.add(at: .now() + TimeAmount(limit)) {
          watch.giveUp(.timedOut, grace: grace, timers: timers) { task.cancel() }
        }
      }
      result = outcome(await watch.wait(), givenUp: watch.reason)
      if let timeout { timers.remove(timeout) }
      metrics.runDuration.recordNanoseconds((ContinuousClock.now - started).nanoseconds)
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
    runEnded.ring()
  }

  /// How long a handler given up still has to end after its cancellation before it is
  /// abandoned: a third of the lease (one renewal interval), and at least five seconds, so that
  /// a handler that ends late on a loaded machine is still waited for and its end recorded
  /// (with a short lease, a run abandoned at once would run again: a duplicate), while one that
  /// never ends frees its slot.
  static func abandonGrace(lease: Duration) -> Duration {
    max(lease / 3, .seconds(5))
  }

  /// The run's result as its end records it: the handler's own, unless the run was given up.
  /// A handler that ended with an error after it was given up for `runTimeout` (its
  /// cancellation, most likely) failed for that reason; one that did not end in time after it
  /// was abandoned, and the worker says so once.
  private func outcome(_ waited: RunWatch.Outcome, givenUp reason: RunWatch.Reason?)
    -> Result<RunEnd, any Error>
  {
    switch (waited, reason) {
    case (.ended(.failure), .timedOut?):
      return .failure(RunGivenUp(reason: .timedOut, limit: runTimeout, abandoned: false))
    case (.ended(let result), _):
      return result
    case (.abandoned, let reason):
      let givenUp = RunGivenUp(
        reason: reason ?? .leaseLost, limit: runTimeout, abandoned: true)
      let message =
        "\(givenUp): the worker no longer waits for it; its burst runs again, so its writes must "
        + "be fenced"
      logger.warning("\(message)")
      return .failure(givenUp)
    }
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
      metrics.succeeded.increment()
      return
    case .success(.stale):
      return leaseLost(burst, returned: true)
    case .success(.commitUnconfirmed):
      return notRecorded(burst, unconfirmed: true, returned: true)
    case .success(.returned), .failure:
      break
    }
    var outage = Outage(
      what: "recording a run's end", cap: outageBackoff, logger: logger
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
            metrics.succeeded.increment()
          } else {
            notRecorded(burst, unconfirmed: unconfirmed, returned: true)
          }
        case .failure(let error):
          let kept = try await uncancelled { [queue] in try await queue.failed(burst, error: error)
          }
          recordedFailure(kept, of: burst, error: error, unconfirmed: unconfirmed)
        }
        outage.ended()
        return
      } catch let error as PostgresDelayedPreemptiveQueueError
        where !error.isTransient
      {
        defect(
          error, in: error.operation ?? (result.isSuccess ? "complete" : "recordFailure"),
          of: burst)
        return
      } catch {
        if (error as? PostgresDelayedPreemptiveQueueError)?.isUnconfirmed == true {
          unconfirmed = true
        }
        let wait = outage.failed(error, defects: metrics)
        if leases.isLost(burst.claim) {
          leaseLost(burst, returned: result.isSuccess)
          return
        }
        // A stopping worker still records its runs' ends: its cancellation does not cut the
        // wait short (the lease bounds the retries).
        await sleepUncancelled(for: wait)
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
      metrics.retried.increment()
      logger.info(
        "handler threw; the later burst of its key, with a newer value, runs next: \(keyless(error))",
        metadata: ["dpd.attempt": "\(burst.attempt)"])
      logger.debug("gave way", metadata: ["dpd.key": "\(burst.key)"])
    case .kept?:
      metrics.failed.increment()
      let runs = burst.attempt == 1 ? "1 run" : "\(burst.attempt) runs"
      logger.warning(
        "burst kept as failed after \(runs): \(keyless(error))",
        metadata: ["dpd.attempts": "\(burst.attempt)"])
      logger.debug("kept failure", metadata: ["dpd.key": "\(burst.key)"])
    case .retried?:
      metrics.retried.increment()
      logger.info(
        "handler threw; retrying with backoff: \(keyless(error))",
        metadata: ["dpd.attempt": "\(burst.attempt)"])
      logger.debug("retry", metadata: ["dpd.key": "\(burst.key)"])
    }
  }

  /// The end's statement matched no row under the run's claim: the claim was taken over, or an
  /// earlier attempt whose answer was lost recorded the end.
  private func notRecorded(_ burst: ClaimedBurst, unconfirmed: Bool, returned: Bool = false) {
    guard unconfirmed else { return leaseLost(burst, returned: returned) }
    metrics.unconfirmed.increment()
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
    metrics.defect(in: statement)
    let message =
      "the database refused \(statement), a defect of this package: \(keyless(error)); the run's end is "
      + "not recorded, and its burst runs again once its lease runs out"
    logger.error(
      "\(message)",
      metadata: ["dpd.statement": "\(statement)", "dpd.attempt": "\(burst.attempt)"])
    logger.debug("defect", metadata: ["dpd.key": "\(burst.key)"])
  }

  /// A run whose end the database no longer takes: said as it happened, a handler that
  /// `returned` (or threw) after its lease ran out, or one that was cancelled for it.
  private func leaseLost(_ burst: ClaimedBurst, returned: Bool = false) {
    metrics.leaseLost.increment()
    let run =
      returned
      ? "the handler returned after its lease ran out"
      : leases.isLost(burst.claim)
        ? "the run was cancelled" : "the handler threw after its lease ran out"
    logger.warning(
      "lease lost: \(run), and its end was not recorded; it runs again elsewhere",
      metadata: ["dpd.attempt": "\(burst.attempt)"])
    logger.debug("lease lost", metadata: ["dpd.key": "\(burst.key)"])
  }
}

extension Result {
  var isSuccess: Bool {
    if case .success = self { return true }
    return false
  }
}

extension Duration {
  var nanoseconds: Int64 {
    let (seconds, attoseconds) = components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }
}
