import Foundation
import Logging

/// The worker behind `run(concurrency:handler:)`: its claim loop (``claimLoop(doorbell:)``)
/// claims due bursts while a slot is free (and ahead of the free slots while a backlog lasts,
/// ``ClaimPace``), runs each one in its own job
/// (``perform(_:claimedAt:)``), sleeps until the earliest deadline (or a NOTIFY, or the safety
/// poll), and on cancellation claims nothing more and waits for the jobs in flight. Beside it,
/// one task renews the leases of all its runs (``renewLeases()``), one listens for wake-ups
/// (``listen(ringing:)``), and one samples the gauges (``sampleGauges()``): each loop is in a
/// file of its own.
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

}
