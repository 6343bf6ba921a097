/// A burst that a worker holds at this moment, as
/// ``PostgresDelayedPreemptiveQueue/runningBursts()`` lists it: what an operator needs to see
/// which replica runs which key, and whether its worker still renews the lease.
///
/// ```swift
/// for burst in try await queue.runningBursts() where burst.leaseLeft < .zero {
///   logger.warning("\(burst.owner) stopped renewing \(burst.key)")
/// }
/// ```
public struct PostgresRunningBurst: Sendable, Hashable {
  /// The burst's key.
  public var key: String
  /// The worker that claimed it: `host/pid/id`, one `id` per call of `run`.
  public var owner: String
  /// The run's number, as its handler sees it in ``PostgresBurstRun/attempt``: 1 for the
  /// burst's first run.
  public var attempt: Int
  /// The claim's fence, as its handler sees it in ``PostgresBurstRun/fence``.
  public var fence: Int64
  /// How long the lease has left on the database's clock. The worker renews it every third of
  /// the queue's `lease`, so it stays between two thirds of `lease` and `lease` while the worker
  /// is healthy. Negative: the lease ran out (the worker died, paused or lost the database)
  /// and the next claim of any worker takes the burst over.
  public var leaseLeft: Duration

  /// Creates a record of a running burst (the queue makes these; tests may too).
  public init(key: String, owner: String, attempt: Int, fence: Int64, leaseLeft: Duration) {
    self.key = key
    self.owner = owner
    self.attempt = attempt
    self.fence = fence
    self.leaseLeft = leaseLeft
  }
}
