import Foundation

extension Worker {
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
  func claimLoop(doorbell: Doorbell) async throws {
    var failure: (any Error)?
    var outage = Outage(
      what: "claiming", cap: queue.outageBackoff, logger: logger)
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
            logger.error("worker stops: \(keyless(error))")
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
          + "their lease: \(keyless(error))"
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
    // A claim answered after its lease could have run out by this worker's clock (a partition
    // held the answer up, or a loaded machine was slow) is run only if a renewal finds it still
    // held: another replica may have taken the burst over meanwhile, and run it already, and a
    // run started now would overlap that one. A renewed claim has a whole lease again.
    var leaseFrom = sentAt
    var stillHeld: Set<UUID>?
    let runnable = claimed.filter { !$0.exhausted && !$0.gaveWay }.map(\.claim)
    if ContinuousClock.now >= sentAt + queue.lease, !runnable.isEmpty {
      leaseFrom = ContinuousClock.now
      stillHeld = Set(
        (try? await uncancelled { [queue] in try await queue.renew(runnable) }) ?? [])
    }
    var notRun: [String] = []
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
      if let stillHeld, !stillHeld.contains(burst.claim) {
        queue.metrics.leaseLost.increment()
        notRun.append(burst.key)
        continue
      }
      if burst.takenOver {
        queue.metrics.takeovers.increment()
        let message =
          "took over a burst whose lease ran out"
          + (burst.endedStaleTransaction
            ? "; ended the stale run's open transaction, releasing its locks" : "")
        logger.warning("\(message)", metadata: ["dpd.attempt": "\(burst.attempt)"])
        logger.debug("took over", metadata: ["dpd.key": "\(burst.key)"])
      }
      state.running.insert(burst.claim)
      leases.add(burst.claim, expiry: leaseFrom + queue.lease)
      let job = Task { await perform(burst, claimedAt: sentAt) }
      group.addTask {
        await job.value
        return .finished(burst.claim)
      }
    }
    if !notRun.isEmpty {
      let message =
        "\(notRun.count) claims answered after their lease ran out were taken over or could not be "
        + "renewed, and were not run; they run again once claimed anew"
      logger.warning(
        "\(message)", metadata: ["dpd.claim.took": "\(ContinuousClock.now - sentAt)"])
      logger.debug("claims not run", metadata: ["dpd.keys": "\(notRun)"])
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
}
