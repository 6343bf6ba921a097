import Metrics

/// The metrics of one queue, through swift-metrics, so that operators can see what it does.
/// Every metric has the dimension `queue` (the queue's name); runs also have `outcome`. None has
/// the key: a service with 10⁶ keys would flood its metrics backend.
///
/// | label | kind | what |
/// |---|---|---|
/// | `dpd.postgres.submissions` | counter | `delay` calls stored |
/// | `dpd.postgres.runs` | counter, `outcome` | ends of runs: `succeeded`, `retried`, `failed` (kept in `failures()`), `lease_lost` |
/// | `dpd.postgres.takeovers` | counter | claims of a burst whose lease had run out on another worker |
/// | `dpd.postgres.lateness` | timer | from a burst's deadline to its handler's start |
/// | `dpd.postgres.run.duration` | timer | the handler's run time |
/// | `dpd.postgres.pending` | gauge | bursts not finished, sampled by each worker |
/// | `dpd.postgres.overdue.age` | gauge | seconds since the deadline of the oldest due burst not yet claimed (0: none) |
struct QueueMetrics: Sendable {
  let submissions: Counter
  let succeeded: Counter
  let retried: Counter
  let failed: Counter
  let leaseLost: Counter
  let takeovers: Counter
  let lateness: Metrics.Timer
  let runDuration: Metrics.Timer
  let pending: Gauge
  let overdueAge: Gauge

  init(queue name: String, factory: any MetricsFactory) {
    let queue = [("queue", name)]
    func runs(_ outcome: String) -> Counter {
      Counter(
        label: "dpd.postgres.runs", dimensions: queue + [("outcome", outcome)], factory: factory)
    }
    submissions = Counter(label: "dpd.postgres.submissions", dimensions: queue, factory: factory)
    succeeded = runs("succeeded")
    retried = runs("retried")
    failed = runs("failed")
    leaseLost = runs("lease_lost")
    takeovers = Counter(label: "dpd.postgres.takeovers", dimensions: queue, factory: factory)
    lateness = Metrics.Timer(label: "dpd.postgres.lateness", dimensions: queue, factory: factory)
    runDuration = Metrics.Timer(
      label: "dpd.postgres.run.duration", dimensions: queue, factory: factory)
    pending = Gauge(label: "dpd.postgres.pending", dimensions: queue, factory: factory)
    overdueAge = Gauge(label: "dpd.postgres.overdue.age", dimensions: queue, factory: factory)
  }
}
