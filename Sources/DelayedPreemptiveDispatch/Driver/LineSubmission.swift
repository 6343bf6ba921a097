/// What a submission did to its line.
@usableFromInline
struct LineSubmission<Work: Sendable> {
  @usableFromInline var ticket: DelayTicket
  /// The submission started a burst.
  @usableFromInline var started = false
  /// The leading run of a burst that started, to decide before anything decided later.
  @usableFromInline var leading: DecidedRun<Work>?
  @usableFromInline var timer: TimerRequest?
  /// The burst's record, when tasks await a ticket that this submission preempted.
  @usableFromInline var preempted: BurstRecord?
  /// The submission reached `maxSubmissions`: the burst ended, as a flush ends it.
  @usableFromInline var ending: BurstEnding<Work>?

  @inlinable
  init(
    ticket: DelayTicket, started: Bool = false, timer: TimerRequest? = nil,
    preempted: BurstRecord? = nil
  ) {
    self.ticket = ticket
    self.started = started
    self.timer = timer
    self.preempted = preempted
  }
}
