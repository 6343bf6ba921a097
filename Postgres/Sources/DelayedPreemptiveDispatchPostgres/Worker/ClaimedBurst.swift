import Foundation

/// One claimed row, as the worker runs it.
struct ClaimedBurst: Sendable {
  var key: String
  var json: String
  var claim: UUID
  /// The run's number: 1 for the burst's first run.
  var attempt: Int
  var fence: Int64
  /// Not claimed: kept in `dpd_failures`, its attempts spent on runs that never ended; no burst
  /// of its key waits.
  var exhausted: Bool
  /// Not claimed: kept in `dpd_failures`, its attempts spent on runs that never ended; the
  /// burst behind it is the head now, and a later claim runs it.
  var gaveWay: Bool
  /// The row was claimed before, by a worker whose lease ran out.
  var takenOver: Bool
  /// The claim ended the backend of the stale run's open transaction (``ClaimStatement``).
  var endedStaleTransaction = false
  /// From the burst's deadline to the claim, on the database's clock.
  var latenessMilliseconds: Double
  /// How many submissions the burst received.
  var submissions: Int = 1
  /// The trace contexts stored with its submissions (a JSON array of ``TraceCarrier``s); nil
  /// when none was stored.
  var traceContexts: String? = nil
  /// When the run's handler started, on the worker's clock; nil while it has not (or when it
  /// never did: its value did not decode). The run's end moves `last_start` from the claim to
  /// this instant (see `SQLFragment.handlerStart(since:)`), so that `minimumSpacing` counts from the
  /// handler's start.
  var handlerStarted: ContinuousClock.Instant?
  /// The stored value did not decode as the queue's `Value`: the run is kept as a failure at
  /// once, never retried (rule P15).
  var valueDoesNotDecode = false

  /// Milliseconds from the handler's start to now, as the end's statements take it: -1 when the
  /// handler did not start.
  var millisecondsSinceHandlerStart: Double {
    handlerStarted.map { (ContinuousClock.now - $0).milliseconds } ?? -1
  }
}
