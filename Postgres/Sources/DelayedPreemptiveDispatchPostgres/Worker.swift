import Foundation
import PostgresNIO

/// The loop behind ``PostgresDelayedPreemptiveQueue/run(concurrency:handler:)``: claim due
/// bursts while a slot is free, run each one in its own job, sleep until the earliest deadline
/// (or a NOTIFY, or the safety poll), and on cancellation claim nothing more and wait for the
/// jobs in flight.
struct Worker<Value: Codable & Sendable>: Sendable {
  let queue: PostgresDelayedPreemptiveQueue<Value>
  let concurrency: Int
  let handler: @Sendable (String, Value) async throws -> Void
  let owner: String
  let completions: CompletionBatcher<Value>

  init(
    queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int,
    handler: @escaping @Sendable (String, Value) async throws -> Void, owner: String
  ) {
    self.queue = queue
    self.concurrency = concurrency
    self.handler = handler
    self.owner = owner
    self.completions = CompletionBatcher(queue: queue)
  }

  private enum Event: Sendable {
    case finished(UUID)
    case woke
  }

  func run() async throws {
    let doorbell = Doorbell()
    try await withThrowingTaskGroup(of: Void.self) { background in
      background.addTask { await listen(ringing: doorbell) }
      defer { background.cancelAll() }
      try await claimLoop(doorbell: doorbell)
    }
  }

  /// Claims and starts jobs until cancelled (or a claim fails), then waits for the jobs in
  /// flight. Rethrows the claim's error after that wait.
  private func claimLoop(doorbell: Doorbell) async throws {
    var failure: (any Error)?
    await withTaskGroup(of: Event.self) { group in
      var running = Set<UUID>()
      var sleeping = false
      var backlog = false
      while true {
        if !Task.isCancelled && failure == nil {
          do {
            let wait = try await claimAndStart(
              running: &running, backlog: &backlog, group: &group)
            if let wait, !sleeping {
              sleeping = true
              group.addTask {
                await doorbell.wait(timeout: wait)
                return .woke
              }
            }
          } catch {
            failure = error
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
    let claimed = try await uncancelled { try await queue.claim(limit: free, owner: owner) }
    backlog = claimed.count == free
    for burst in claimed {
      running.insert(burst.claim)
      let job = Task { await perform(burst) }
      group.addTask {
        await job.value
        return .finished(burst.claim)
      }
    }
    if claimed.count == free { return running.count < concurrency ? .zero : nil }
    let untilDue = try await uncancelled { try await queue.millisecondsUntilDue() }
    let sleep = untilDue.map { Duration.milliseconds(max(0, $0)) } ?? queue.safetyPoll
    return min(sleep, queue.safetyPoll)
  }

  /// Runs one claimed burst, renewing its lease while the handler runs, and records the end.
  private func perform(_ burst: ClaimedBurst) async {
    let outcome: Result<Void, any Error>
    do {
      let value = try ValueCodec.decode(Value.self, from: burst.json, key: burst.key)
      outcome = await withTaskGroup(of: Void.self) { renewal in
        renewal.addTask { await renewLease(of: burst.claim) }
        defer { renewal.cancelAll() }
        do {
          try await handler(burst.key, value)
          return .success(())
        } catch {
          return .failure(error)
        }
      }
    } catch {
      outcome = .failure(error)
    }
    await record(outcome, of: burst)
  }

  private func renewLease(of claim: UUID) async {
    let interval = queue.lease / 3
    while true {
      do {
        try await Task.sleep(for: interval)
      } catch {
        return
      }
      _ = try? await queue.renew([claim])
    }
  }

  /// Records the end of a run, retrying a failed write a few times; if it never lands, the
  /// lease expires and another replica runs the burst again (at least once).
  private func record(_ outcome: Result<Void, any Error>, of burst: ClaimedBurst) async {
    for attempt in 0..<5 {
      do {
        switch outcome {
        case .success: try await completions.succeeded(burst)
        case .failure(let error): try await queue.failed(burst, error: error)
        }
        return
      } catch {
        do {
          try await Task.sleep(for: .milliseconds(50 << attempt))
        } catch {
          return
        }
      }
    }
  }

  /// Listens for wake-ups of this queue; reconnects after an error until cancelled.
  private func listen(ringing doorbell: Doorbell) async {
    while !Task.isCancelled {
      do {
        try await queue.client.withConnection { connection in
          try await connection.listen(on: wakeChannel) { notifications in
            await doorbell.ring()  // anything due meanwhile is found by the next claim
            for try await notification in notifications where notification.payload == queue.name {
              await doorbell.ring()
            }
          }
        }
      } catch {
        do {
          try await Task.sleep(for: queue.safetyPoll)
        } catch {
          return
        }
      }
    }
  }
}

/// Runs `operation` in a task that the caller's cancellation does not reach, so that the
/// database calls of a worker that is shutting down still complete.
func uncancelled<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result)
  async throws -> Result
{
  try await Task { try await operation() }.value
}
