import Logging

/// One loop's view of an outage: a backoff that starts at 100 ms and doubles up to `cap`, a
/// warning when the outage starts and a notice when it ends. An error that is no outage (the
/// database refused the statement for its data, or for another reason that waiting cannot heal)
/// is a defect: it is logged at error level, each time, and counted under the label of the call
/// that was refused (a loop sends several: the claim loop's `claim`, `nextDeadline` and
/// `releaseUnknownClaims`), and waits the same backoff.
struct Outage {
  /// What the loop does, for the log lines: "claiming", "renewing leases"…
  let what: String
  let cap: Duration
  let logger: Logger
  private var backoff: Duration?
  private var started: ContinuousClock.Instant?

  /// Whether the loop is in an outage: a call failed for it, and none succeeded since.
  var isOngoing: Bool { started != nil }

  init(what: String, cap: Duration, logger: Logger) {
    self.what = what
    self.cap = cap
    self.logger = logger
  }

  /// Returns how long to wait before the next try.
  mutating func failed(_ error: any Error, defects: QueueMetrics) -> Duration {
    if !PostgresDelayedPreemptiveQueueError.Kind(of: error).isTransient {
      // Every refusal the package's calls throw names its call; `what` only for any other.
      let statement = (error as? PostgresDelayedPreemptiveQueueError)?.operation ?? what
      defects.defect(in: statement)
      logger.error(
        "the database refused \(statement) while \(what), a defect of this package: \(keyless(error))",
        metadata: ["dpd.statement": "\(statement)"])
    } else if started == nil {
      started = .now
      logger.warning("database unavailable while \(what); retrying: \(keyless(error))")
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
