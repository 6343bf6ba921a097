import Metrics

/// The metrics of one queue, through swift-metrics, so that operators can see what it does.
/// Every metric has the dimension `queue` (the queue's name); runs also have `outcome`. None has
/// the key: a service with 10⁶ keys would flood its metrics backend.
///
/// Each is counted in the process that does what it counts: the one that calls `delay` for
/// submissions, the worker that runs a burst for runs, defects, takeovers and the timers. So a
/// replica that only runs workers reports no submissions, and one that only submits reports no
/// runs: sum them over the replicas. The gauges are read from the database by every running
/// worker, so each replica that runs one reports the same queue-wide value.
///
/// | label | kind | what | when, and where |
/// |---|---|---|---|
/// | `dpd.postgres.submissions` | counter | `delay` calls stored (with `on:`, sent in the caller's transaction: the package cannot see whether it commits) | when a `delay` returns, in the process that called it |
/// | `dpd.postgres.runs` | counter, `outcome` | ends of runs: `succeeded`, `retried`, `failed` (kept in `failures()` with its value: never dropped), `lease_lost`, `unconfirmed` (an attempt to record the end lost its answer, and the retry found the end recorded or the burst taken over) | when the run's end is recorded (or found lost), in the worker that ran it |
/// | `dpd.postgres.defects` | counter, `statement` | statements of a worker that the database refused for their data (SQLSTATE classes 22, 23, 54, XX, and any error that is neither an outage nor a conflict): a defect of this package, logged at error level; the run's burst runs again once its lease runs out | when refused, in the worker that sent it |
/// | `dpd.postgres.takeovers` | counter | claims of a burst whose lease had run out on another worker | at the claim, in the worker that took it over |
/// | `dpd.postgres.lateness` | timer | from a burst's deadline to its handler's start | at the handler's start, in the worker that runs it |
/// | `dpd.postgres.run.duration` | timer | the handler's run time | when the handler returns, in the worker that runs it |
/// | `dpd.postgres.pending` | gauge | bursts not finished, queue-wide | sampled by every running worker when it starts, soon after each of its own runs ends (at most five times a second), and at least every five seconds |
/// | `dpd.postgres.overdue.age` | gauge | seconds since the deadline of the oldest due burst not yet claimed (0: none), queue-wide | sampled with `pending` |
///
/// `PostgresObservabilityTests.pendingGaugeFollowsTheWorkersOwnRuns` holds the gauge's refresh.
///
/// A class: the queue and its copies share one, so that a copy of the queue (every call and
/// every run makes some) retains one reference for the metrics, not the thirteen they hold.
final class QueueMetrics: Sendable {
  let submissions: Counter
  let succeeded: Counter
  let retried: Counter
  let failed: Counter
  let leaseLost: Counter
  let unconfirmed: Counter
  let takeovers: Counter
  let lateness: Metrics.Timer
  let runDuration: Metrics.Timer
  let pending: Gauge
  let overdueAge: Gauge
  private let queue: [(String, String)]
  private let factory: any MetricsFactory

  /// Counts a defect: `statement` is the label of the worker's statement that was refused.
  func defect(in statement: String) {
    Counter(
      label: "dpd.postgres.defects", dimensions: queue + [("statement", statement)],
      factory: factory
    ).increment()
  }

  init(queue name: String, factory: any MetricsFactory) {
    let queue = [("queue", name)]
    self.queue = queue
    self.factory = factory
    func runs(_ outcome: String) -> Counter {
      Counter(
        label: "dpd.postgres.runs", dimensions: queue + [("outcome", outcome)], factory: factory)
    }
    submissions = Counter(label: "dpd.postgres.submissions", dimensions: queue, factory: factory)
    succeeded = runs("succeeded")
    retried = runs("retried")
    failed = runs("failed")
    leaseLost = runs("lease_lost")
    unconfirmed = runs("unconfirmed")
    takeovers = Counter(label: "dpd.postgres.takeovers", dimensions: queue, factory: factory)
    lateness = Metrics.Timer(label: "dpd.postgres.lateness", dimensions: queue, factory: factory)
    runDuration = Metrics.Timer(
      label: "dpd.postgres.run.duration", dimensions: queue, factory: factory)
    pending = Gauge(label: "dpd.postgres.pending", dimensions: queue, factory: factory)
    overdueAge = Gauge(label: "dpd.postgres.overdue.age", dimensions: queue, factory: factory)
  }
}
