import Foundation
import Instrumentation
import Logging
import Tracing

/// The worker behind `run(concurrency:handler:)`: its claim loop (``claimLoop(doorbell:)``)
/// claims due bursts while a slot is free (and ahead of the free slots while a backlog lasts,
/// ``ClaimPace``), runs each one in its own job
/// (``perform(_:claimedAt:)``), sleeps until the earliest deadline (or a NOTIFY, or the safety
/// poll), and on cancellation claims nothing more and waits for the jobs in flight. Beside it,
/// one task renews the leases of all its runs (``renewLeases()``), one listens for wake-ups
/// (``listen(ringing:)``), and one samples the gauges (``sampleGauges()``): each loop is in a
/// file of its own.
struct Worker<Value: Codable & Sendable>: Sendable {
  /// What the worker holds, in one box: every job, claim and renewal captures the worker, and a
  /// copy of it is then one reference, not the two dozen its parts (the queue's among them)
  /// would cost in retains and releases for each run.
  private final class Parts: Sendable {
    let queue: PostgresDelayedPreemptiveQueue<Value>
    let concurrency: Int
    let handler: RunHandler<Value>
    let owner: String
    let completions: CompletionBatcher
    let leases = LeaseBook()
    let runEnded = Doorbell()
    let spare: SpareConnection?
    let logger: Logger
    /// The parts of the queue that every run reads, held apart from it: the queue is generic,
    /// and each read of one of its fields through ``Worker/queue`` copies all of it (two dozen
    /// retains and as many releases, about a tenth of a run's CPU in a drain).
    let name: String
    let metrics: QueueMetrics
    let callTimers: CallTimers
    let lease: Duration
    let runTimeout: Duration?
    let outageBackoff: Duration
    let tracer: (any Tracer)?
    /// ``Worker/abandonGrace(lease:)`` of the worker's lease, worked out once: a division of a
    /// `Duration` (128-bit) cost each run some 670 instructions.
    let abandonGrace: Duration

    init(
      queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int,
      handler: RunHandler<Value>, owner: String
    ) {
      self.queue = queue
      self.concurrency = concurrency
      self.handler = handler
      self.owner = owner
      self.name = queue.name
      self.metrics = queue.metrics
      self.callTimers = queue.callTimers
      self.lease = queue.lease
      self.runTimeout = queue.runTimeout
      self.outageBackoff = queue.outageBackoff
      self.tracer = queue.tracer
      self.abandonGrace = Worker.abandonGrace(lease: queue.lease)
      self.completions = CompletionBatcher(queue: queue)
      self.spare = SpareConnection(configuration: queue.probe?.configuration)
      var logger = queue.logger
      logger[metadataKey: "dpd.worker"] = "\(owner)"
      self.logger = logger
    }
  }

  private let parts: Parts

  var queue: PostgresDelayedPreemptiveQueue<Value> { parts.queue }
  var concurrency: Int { parts.concurrency }
  var handler: RunHandler<Value> { parts.handler }
  var owner: String { parts.owner }
  var completions: CompletionBatcher { parts.completions }
  var leases: LeaseBook { parts.leases }
  /// Rung when a run's end is recorded: the pending gauge is sampled again.
  var runEnded: Doorbell { parts.runEnded }
  /// The claim loop's own connection, for when the pool cannot lease one promptly (see
  /// ``SpareConnection``); nil for a queue made without its client's configuration.
  var spare: SpareConnection? { parts.spare }
  var logger: Logger { parts.logger }
  /// The queue's name, metrics, timers, lease, `runTimeout`, `outageBackoff` and tracer, read
  /// without a copy of the queue (see ``Parts``).
  var name: String { parts.name }
  var metrics: QueueMetrics { parts.metrics }
  var callTimers: CallTimers { parts.callTimers }
  var lease: Duration { parts.lease }
  var runTimeout: Duration? { parts.runTimeout }
  var outageBackoff: Duration { parts.outageBackoff }
  /// How long a run given up still has to end (``abandonGrace(lease:)`` of ``lease``).
  var abandonGraceOfLease: Duration { parts.abandonGrace }
  var tracerInUse: any Tracer { parts.tracer ?? InstrumentationSystem.tracer }

  init(
    queue: PostgresDelayedPreemptiveQueue<Value>, concurrency: Int,
    handler: RunHandler<Value>, owner: String
  ) {
    parts = Parts(queue: queue, concurrency: concurrency, handler: handler, owner: owner)
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
