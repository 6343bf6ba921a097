import Foundation

extension Worker {
  /// What ends a wait of the claim loop: a job finished (after `took` in its slot), the worker
  /// woke, a claim answered, or the read of the next deadline after a claim that found fewer
  /// rows than it asked for did (how long to sleep).
  enum Event: Sendable {
    case finished(UUID, took: Duration)
    case woke
    case claimed(Result<ClaimAnswer, ClaimFailure>)
    case nextDue(Result<Duration, ClaimFailure>)
  }

  /// What a claim brought, and what the loop does next.
  struct ClaimAnswer: Sendable {
    var claimed: [ClaimedBurst]
    /// How many rows it asked for.
    var asked: Int
    var sentAt: ContinuousClock.Instant
    /// The claim statement's round trip.
    var took: Duration
    /// From when the leases of the claimed rows count (a late answer was renewed).
    var leaseFrom: ContinuousClock.Instant
    /// For a late answer: the claims a renewal found still held.
    var stillHeld: Set<UUID>?
    /// The window for releasing claims whose answer was lost has passed.
    var releaseWindowPassed = false
  }

  /// A claim (or the release before it) that failed. `answerLost`: the claim was sent and its
  /// answer lost, so it may have claimed rows this worker does not know of.
  struct ClaimFailure: Error {
    var error: any Error
    var answerLost: Bool
  }

  /// Claims and starts jobs until cancelled (or an error that retrying cannot heal), then runs
  /// the rows it claimed ahead and waits for the jobs in flight, and releases any claim of this
  /// worker that it never learnt of. Rethrows that error after the wait.
  ///
  /// A claim runs beside the jobs, as a task of its own, so that while its answer is on the way
  /// the slots that free start the rows claimed ahead (``ClaimPace``).
  func claimLoop(doorbell: Doorbell) async throws {
    var failure: (any Error)?
    var outage = Outage(
      what: "claiming", cap: outageBackoff, logger: logger)
    var state = ClaimState(concurrency: concurrency)
    await withTaskGroup(of: Event.self) { group in
      var sleeping = false
      /// The sleep before the next claim after `error`; nil when the loop stops for it.
      func wait(after error: any Error) -> Duration? {
        if let error = error as? PostgresDelayedPreemptiveQueueError, error.isPermanent {
          logger.error("worker stops: \(keyless(error))")
          failure = error
          return nil
        }
        return outage.failed(error, defects: metrics)
      }
      /// Sleeps until `sleep` passes or the doorbell rings, unless the loop sleeps already.
      func sleepUnlessAsleep(_ sleep: Duration) {
        guard !sleeping else { return }
        sleeping = true
        group.addTask {
          await doorbell.wait(timeout: sleep)
          return .woke
        }
      }
      var gathering: GroupCommit<CompletionWriter>.Gathering?
      while true {
        let stopping = Task.isCancelled || failure != nil
        let wanted = Self.endGathering(
          backlog: state.backlog && !stopping, pace: state.pace)
        if wanted != gathering {
          gathering = wanted
          completions.gather(wanted)
        }
        startReady(&state, group: &group)
        if !Task.isCancelled && failure == nil, let limit = state.limit {
          state.sent()
          let known = state.known
          let releaseUntil = state.releaseUnknownUntil
          let viaSpare = spareUse(outage: outage.isOngoing)
          group.addTask {
            .claimed(
              await fetchClaims(
                limit: limit, known: known, releaseUnknownUntil: releaseUntil, spare: viaSpare))
          }
        }
        if (Task.isCancelled || failure != nil) && state.running.isEmpty && state.ready.isEmpty
          && !state.claiming
        {
          break
        }
        switch await group.next() {
        case .finished(let claim, let took):
          state.finished(claim, took: took)
        case .woke:
          sleeping = false
          state.woke()
        case .claimed(.success(let answer)):
          state.pace.claimed(took: answer.took)
          if answer.releaseWindowPassed { state.releaseUnknownUntil = nil }
          state.backlog = answer.claimed.count == answer.asked
          accept(answer, into: &state)
          outage.ended()
          if state.backlog {
            state.claimedAll()
          } else {
            // Fewer rows were due than asked for: how long to sleep is read beside the runs,
            // which start first, and no claim is made until it answers (or a job ends).
            state.readsNextDue()
            let viaSpare = spareUse(outage: outage.isOngoing)
            group.addTask { .nextDue(await untilDue(spare: viaSpare)) }
          }
        case .claimed(.failure(let claimFailure)):
          if claimFailure.answerLost {
            state.releaseUnknownUntil = ContinuousClock.now + queue.connectionTimeout * 2
          }
          state.failed()
          if let sleep = wait(after: claimFailure.error) {
            sleepUnlessAsleep(sleep)
          }
        case .nextDue(.success(let until)):
          if state.readAnswered() {
            sleepUnlessAsleep(until)
          }
        case .nextDue(.failure(let readFailure)):
          state.failed()
          if let sleep = wait(after: readFailure.error) {
            sleepUnlessAsleep(sleep)
          }
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
          + "their lease: \(keyless(error))"
        logger.warning("\(message)")
      }
    }
    if let failure { throw failure }
  }

  /// Claims up to `limit` rows, after releasing the claims whose answer was lost (while
  /// `releaseUnknownUntil` has not passed) beyond `known`; and when fewer rows came than it
  /// asked for, asks how long until the next is due.
  ///
  /// Runs as a task beside the loop, under no cancellation: the database calls of a worker that
  /// is shutting down still complete (each bounded by `connectionTimeout`).
  private func fetchClaims(
    limit: Int, known: [UUID], releaseUnknownUntil: ContinuousClock.Instant?,
    spare viaSpare: (connection: SpareConnection, after: Duration)?
  ) async -> Result<ClaimAnswer, ClaimFailure> {
    var releaseWindowPassed = false
    if let until = releaseUnknownUntil {
      do {
        _ = try await releaseUnknownClaims(known: known, spare: viaSpare)
      } catch {
        return .failure(ClaimFailure(error: error, answerLost: false))
      }
      releaseWindowPassed = ContinuousClock.now >= until
    }
    let sentAt = ContinuousClock.now
    let claimed: [ClaimedBurst]
    do {
      claimed = try await uncancelled { [queue, owner] in
        try await queue.claim(limit: limit, owner: owner, spare: viaSpare)
      }
    } catch {
      // Never sent when the database was unreachable: nothing was claimed.
      let unreachable: Bool
      if case .databaseUnreachable? = error as? PostgresDelayedPreemptiveQueueError {
        unreachable = true
      } else {
        unreachable = false
      }
      return .failure(ClaimFailure(error: error, answerLost: !unreachable))
    }
    let took = ContinuousClock.now - sentAt
    // A claim answered after its lease could have run out by this worker's clock (a partition
    // held the answer up, or a loaded machine was slow) is run only if a renewal finds it still
    // held: another replica may have taken the burst over meanwhile, and run it already, and a
    // run started now would overlap that one. A renewed claim has a whole lease again.
    var answer = ClaimAnswer(
      claimed: claimed, asked: limit, sentAt: sentAt, took: took, leaseFrom: sentAt,
      releaseWindowPassed: releaseWindowPassed)
    let runnable = claimed.filter { !$0.exhausted && !$0.gaveWay }.map(\.claim)
    if ContinuousClock.now >= sentAt + lease, !runnable.isEmpty {
      answer.leaseFrom = ContinuousClock.now
      do {
        answer.stillHeld = Set(try await uncancelled { [queue] in try await queue.renew(runnable) })
      } catch {
        // None is known to be held: none runs, and each runs again once claimed anew.
        answer.stillHeld = []
        logger.warning(
          "could not renew the claims of a late answer, which are not run: \(keyless(error))")
      }
    }
    return .success(answer)
  }

  /// How long to sleep before the next claim: until the next deadline, at most ``safetyPoll``.
  private func untilDue(spare viaSpare: (connection: SpareConnection, after: Duration)?) async
    -> Result<Duration, ClaimFailure>
  {
    do {
      let untilDue = try await uncancelled { [queue] in
        try await queue.millisecondsUntilDue(spare: viaSpare)
      }
      let sleep = untilDue.map { Duration.milliseconds(max(0, $0)) } ?? queue.safetyPoll
      return .success(min(sleep, queue.safetyPoll))
    } catch {
      return .failure(ClaimFailure(error: error, answerLost: false))
    }
  }

  /// Takes a claim's rows: logs the kept failures and the late claims that were not renewed,
  /// and holds the others, each under its lease, until a slot is free for it.
  private func accept(_ answer: ClaimAnswer, into state: inout ClaimState) {
    var notRun: [String] = []
    for burst in answer.claimed {
      if burst.exhausted || burst.gaveWay {
        metrics.failed.increment()
        let message =
          "burst kept as failed: its last run never ended (its worker died or lost the lease)"
          + (burst.gaveWay ? "; the next burst of its key runs as usual" : "")
        logger.warning("\(message)", metadata: ["dpd.attempts": "\(burst.attempt)"])
        logger.debug("kept failure", metadata: ["dpd.key": "\(burst.key)"])
        continue
      }
      if let stillHeld = answer.stillHeld, !stillHeld.contains(burst.claim) {
        metrics.leaseLost.increment()
        notRun.append(burst.key)
        continue
      }
      if burst.takenOver {
        metrics.takeovers.increment()
        let message =
          "took over a burst whose lease ran out"
          + (burst.endedStaleTransaction
            ? "; ended the stale run's open transaction, releasing its locks" : "")
        logger.warning("\(message)", metadata: ["dpd.attempt": "\(burst.attempt)"])
        logger.debug("took over", metadata: ["dpd.key": "\(burst.key)"])
      }
      leases.add(burst.claim, expiry: answer.leaseFrom + lease)
      state.ready.append((burst, answer.sentAt))
    }
    if !notRun.isEmpty {
      let message =
        "\(notRun.count) claims answered after their lease ran out were taken over or could not be "
        + "renewed, and were not run; they run again once claimed anew"
      logger.warning(
        "\(message)", metadata: ["dpd.claim.took": "\(ContinuousClock.now - answer.sentAt)"])
      logger.debug("claims not run", metadata: ["dpd.keys": "\(notRun)"])
    }
  }

  /// Starts a job for each row that waits, while a slot is free. A row whose lease was lost
  /// while it waited (renewals failed, or this process was paused) is not run: the burst runs
  /// again once claimed anew, here or elsewhere.
  private func startReady(_ state: inout ClaimState, group: inout TaskGroup<Event>) {
    var started = 0
    var lost: [String] = []
    while state.running.count < concurrency, started < state.ready.count {
      let (burst, claimedAt) = state.ready[started]
      started += 1
      if leases.isLostAlone(burst.claim) {
        leases.remove(burst.claim)
        metrics.leaseLost.increment()
        lost.append(burst.key)
        continue
      }
      state.running.insert(burst.claim)
      // The job is a child of the loop: a stopping worker waits for it. Its cancellation (when
      // the worker's task is cancelled) reaches neither the handler, which runs in a task of
      // its own, nor the recording of the run's end (see `perform`).
      group.addTask {
        let start = ContinuousClock.now
        await perform(burst, claimedAt: claimedAt)
        return .finished(burst.claim, took: ContinuousClock.now - start)
      }
    }
    state.ready.removeFirst(started)
    if !lost.isEmpty {
      let message =
        "\(lost.count) claimed bursts lost their lease while they waited for a free slot, and "
        + "were not run; they run again once claimed anew"
      logger.warning("\(message)")
      logger.debug("claims not run", metadata: ["dpd.keys": "\(lost)"])
    }
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

  /// How the ends of runs gather into batches: while a backlog lasts, a batch of fewer ends than
  /// the worker has slots waits for more, for at most about one claim round trip
  /// (1 to 50 ms), so that the worker writes its ends in about as many statements as it claims;
  /// without a backlog each end is written at once. Every end statement has a fixed cost on
  /// both sides (about 512,000 server instructions whatever its rows, see BENCHMARKS.md), and a
  /// drain's ends came about 15 to a statement when written as they ended (half the slots, 16 of
  /// 32, barely changed that). A worker of one slot never gathers.
  static func endGathering(backlog: Bool, pace: ClaimPace)
    -> GroupCommit<CompletionWriter>.Gathering?
  {
    guard backlog, pace.concurrency > 1 else { return nil }
    let roundTrip = pace.roundTrip ?? 0.005
    let milliseconds = Int((min(max(roundTrip, 0.001), 0.05) * 1000).rounded(.up))
    return .init(minimum: pace.concurrency, wait: .milliseconds(milliseconds))
  }

  /// How long a call of the claim loop waits for the pool before it also asks the spare
  /// connection, outside an outage: a pool that every handler keeps busy costs a claim no more.
  static var spareDelay: Duration { .milliseconds(200) }

  /// The spare connection for the claim loop's next call: asked at once during an outage (the
  /// pool may be backing off), else after ``spareDelay``.
  private func spareUse(outage: Bool) -> (connection: SpareConnection, after: Duration)? {
    spare.map { ($0, outage ? .zero : Self.spareDelay) }
  }
}
