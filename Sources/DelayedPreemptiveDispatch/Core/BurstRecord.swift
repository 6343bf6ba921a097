/// The shell that owns a burst: it can bring a record of its current burst up to date.
protocol TicketOwner: AnyObject, Sendable {
  /// Makes `record` know every preemption so far, and report later ones while it has waiters.
  func synchronize(_ record: BurstRecord) async
}

/// What the tickets of one burst need to resolve, shared by every submission of the burst.
///
/// A record is allocated once per burst, never per submission: a ``DelayTicket`` is the record
/// plus a sequence number. The shell tells the record about preemptions only while somebody
/// awaits an outcome (see ``TicketLedger``), so a submission costs no record access.
///
/// The record is the lock box of its state itself (two allocations: the box, and one block for
/// its lock and state), because a keyed instance makes one per pending key.
@usableFromInline
typealias BurstRecord = LockBox<BurstRecordState>

/// The state of a ``BurstRecord``, only ever accessed under its lock.
@usableFromInline
struct BurstRecordState {
  /// A ``TicketOwner``; kept as `AnyObject` so that the inlinable submission path, which
  /// creates records in client code, need not see the protocol.
  weak var owner: AnyObject?
  let leadingSeq: UInt64?
  /// The burst keeps every value (`combine`): no submission is preempted, and every one but
  /// the leading one resolves with the burst's end.
  let keepsAll: Bool
  var leadingFinished = false
  /// Every non-leading submission below this one is known to be preempted.
  var preemptedBelow: UInt64 = 0
  /// Set when the burst ends: its last submission (nil if it had only a leading one).
  var closed = false
  var lastSeq: UInt64?
  /// Set once the last submission has run (`.executed`) or was cancelled.
  var lastOutcome: DelayOutcome?
  var waiters: [(seq: UInt64, continuation: CheckedContinuation<DelayOutcome, Never>)] = []

  func outcome(of seq: UInt64) -> DelayOutcome? {
    if seq == leadingSeq { return leadingFinished ? .executed : nil }
    if closed {
      if keepsAll { return lastSeq == nil ? .preempted : lastOutcome }
      guard seq == lastSeq else { return .preempted }
      return lastOutcome
    }
    return seq < preemptedBelow ? .preempted : nil
  }

  mutating func takeResolved() -> [(CheckedContinuation<DelayOutcome, Never>, DelayOutcome)] {
    var resolved: [(CheckedContinuation<DelayOutcome, Never>, DelayOutcome)] = []
    var waiting: [(seq: UInt64, continuation: CheckedContinuation<DelayOutcome, Never>)] = []
    for waiter in waiters {
      if let outcome = outcome(of: waiter.seq) {
        resolved.append((waiter.continuation, outcome))
      } else {
        waiting.append(waiter)
      }
    }
    waiters = waiting
    return resolved
  }
}

extension LockBox where State == BurstRecordState {
  @usableFromInline
  convenience init(owner: AnyObject, leadingSeq: UInt64?, keepsAll: Bool = false) {
    self.init(BurstRecordState(owner: owner, leadingSeq: leadingSeq, keepsAll: keepsAll))
  }

  /// Records that every non-leading submission below `seq` was preempted, without resuming
  /// anybody: called under an instance's lock. Returns whether tasks wait on the record, to
  /// resume with ``resumeResolved()`` once that lock is released.
  @usableFromInline
  func notePreempted(below seq: UInt64) -> Bool {
    withLock {
      $0.preemptedBelow = max($0.preemptedBelow, seq)
      return !$0.waiters.isEmpty
    }
  }

  /// Resumes the waiters whose outcome is known; outside any instance's lock.
  @usableFromInline
  func resumeResolved() {
    update { _ in }
  }

  /// The burst ended; `lastSeq` runs or is cancelled, every other submission was preempted.
  @usableFromInline
  func close(lastSeq: UInt64?) {
    update {
      $0.closed = true
      $0.lastSeq = lastSeq
    }
  }

  /// The last submission of the ended burst resolved with `outcome`.
  @usableFromInline
  func finish(_ outcome: DelayOutcome) {
    update { $0.lastOutcome = outcome }
  }

  /// The leading submission's task has returned.
  @usableFromInline
  func finishLeading() {
    update { $0.leadingFinished = true }
  }

  /// The outcome of `seq` as far as the record knows it now; `nil` while it is open.
  func knownOutcome(of seq: UInt64) -> DelayOutcome? {
    withLock { $0.outcome(of: seq) }
  }

  func outcome(of seq: UInt64) async -> DelayOutcome {
    let (known, owner) = withLock { ($0.outcome(of: seq), $0.owner) }
    if let known { return known }
    await (owner as? any TicketOwner)?.synchronize(self)
    return await withCheckedContinuation { continuation in
      let known = withLock { state in
        let known = state.outcome(of: seq)
        if known == nil { state.waiters.append((seq, continuation)) }
        return known
      }
      if let known { continuation.resume(returning: known) }
    }
  }

  private func update(_ change: (inout State) -> Void) {
    let resolved = withLock { state in
      change(&state)
      return state.waiters.isEmpty ? [] : state.takeResolved()
    }
    for (continuation, outcome) in resolved { continuation.resume(returning: outcome) }
  }
}
