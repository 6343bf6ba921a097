/// The shell-side bookkeeping that links the state machine's sequence numbers to the
/// ``BurstRecord`` of the pending burst. Kept inside the shell's lock (queue) or isolation
/// (actor), next to the machine.
@usableFromInline
struct TicketLedger: Sendable {
  /// How a line's tickets learn about preemptions.
  @usableFromInline
  enum Tracking: UInt8, Sendable {
    /// Records know their owner and learn preemptions only once somebody awaits an outcome
    /// (the single queue and actor: a submission to a pending burst touches no record).
    case onDemand
    /// Every preemption is reported at once (the keyed shells: their owner cannot find a burst
    /// from its record).
    case always
    /// No tickets at all (a stream iterator: nobody can await a submission).
    case none
  }

  @usableFromInline var current: BurstRecord?
  /// Whether somebody awaits an outcome of the current burst, so that submissions must report
  /// preemptions to the record. Sticky until the burst ends.
  @usableFromInline var reportsPreemption = false
  @usableFromInline let tracking: Tracking
  /// The bursts keep every value (`combine`): a later submission preempts none.
  @usableFromInline let keepsAll: Bool

  @inlinable
  init(tracking: Tracking = .onDemand, keepsAll: Bool = false) {
    self.tracking = tracking
    self.keepsAll = keepsAll
  }

  /// Starts the record of a new burst and returns the ticket of its first submission.
  @inlinable
  mutating func begin(seq: UInt64, leading: Bool, owner: AnyObject) -> DelayTicket {
    let record: BurstRecord
    switch tracking {
    case .none: return DelayTicket(resolved: .executed)
    // The keyed shells learn every preemption at once: their records need no owner.
    case .always: record = BurstRecord(keepsAll: keepsAll)
    case .onDemand: record = OwnedBurstRecord(owner: owner, keepsAll: keepsAll)
    }
    current = record
    reportsPreemption = tracking == .always
    return DelayTicket(record: record, seq: seq, leading: leading)
  }

  /// A submission joined the current burst; the submissions before it are preempted. Returns
  /// the record when tasks await its tickets: the shell resumes them outside its lock
  /// (``BurstEffects/preempted``), since nothing resumes under an instance's lock.
  @inlinable @inline(__always)
  mutating func join(seq: UInt64) -> (ticket: DelayTicket, preempted: BurstRecord?) {
    var preempted: BurstRecord?
    let ticket = join(seq: seq, preempted: &preempted)
    return (ticket, preempted)
  }

  /// ``join(seq:)`` that stores the record into `preempted` only when tasks await its tickets,
  /// and leaves it as it is otherwise: the driver's hot path passes its effects' field, so
  /// that a submission nobody awaits stores, retains and releases nothing there (a `nil`
  /// returned and stored released the field's old value in a caller whose effects live across
  /// submissions, the stream's).
  @inlinable @inline(__always)
  mutating func join(seq: UInt64, preempted: inout BurstRecord?) -> DelayTicket {
    guard let current else {
      guard tracking == .none else {
        preconditionFailure("Internal inconsistency: submission \(seq) joined no burst")
      }
      return DelayTicket(resolved: .preempted)
    }
    if reportsPreemption && !keepsAll && current.notePreempted(below: seq) { preempted = current }
    return DelayTicket(record: current, seq: seq, leading: false)
  }

  /// Brings `record` up to date if it is the current burst's; `lastSeq` is the machine's. The
  /// caller resumes the record's waiters outside its lock (``BurstRecord/resumeResolved()``).
  @inlinable
  mutating func synchronize(_ record: BurstRecord, lastSeq: UInt64?) {
    guard record === current, let lastSeq else { return }
    reportsPreemption = true
    _ = record.notePreempted(below: lastSeq)
  }

  /// The current burst ended; returns its record for the shell to resolve outside its lock
  /// (`nil` for a line without tickets).
  @inlinable
  mutating func end() -> BurstRecord? {
    guard let record = current else {
      guard tracking == .none else {
        preconditionFailure("Internal inconsistency: a burst ended with no record")
      }
      return nil
    }
    current = nil
    reportsPreemption = false
    return record
  }
}
