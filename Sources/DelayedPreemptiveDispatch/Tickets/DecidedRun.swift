/// A task the driver decided to run, with the ticket to resolve once it has returned.
@usableFromInline
struct DecidedRun<Work: Sendable>: Sendable {
  @usableFromInline let work: Work
  /// The record of the burst that decided it; `nil` for a line without tickets (a stream).
  @usableFromInline let record: BurstRecord?
  /// The leading run of its burst, rather than the run that ends it.
  @usableFromInline let isLeading: Bool
  /// A newer burst made this run stale before it started (`cancelsRunningTask`): it starts in
  /// a cancelled task.
  @usableFromInline var isStale = false
  /// With `minimumSpacing`: the instant the run may start, when later than its decision (a
  /// burst that reached `maxSubmissions` before the spacing allowed its run).
  @usableFromInline var startsAt: TimelineInstant?
  /// The generation of the timer that opens the run's start, while it waits for `startsAt`.
  @usableFromInline var gate: UInt64?

  @inlinable
  init(work: Work, record: BurstRecord?, isLeading: Bool) {
    self.work = work
    self.record = record
    self.isLeading = isLeading
  }

  /// Resolves the run's submission as `.executed`; call once the task has returned.
  @inlinable
  func resolve() {
    guard let record else { return }
    if isLeading { record.finishLeading() } else { record.finish(.executed) }
  }
}
