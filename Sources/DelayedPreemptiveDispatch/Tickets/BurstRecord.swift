/// What the tickets of one burst need to resolve, shared by every submission of the burst.
///
/// A record is allocated once per burst, never per submission: a ``DelayTicket`` is the record
/// plus a sequence number (and whether it is the burst's leading submission). The shell tells
/// the record about preemptions only while somebody awaits an outcome (see ``TicketLedger``), so
/// a submission to a single queue costs no record access.
///
/// A keyed instance makes one record per pending key, so a record is as small as a Swift object
/// can be: its header and one packed word (``BurstRecordWord``), 24 bytes, a 32-byte heap block.
/// It has no lock of its own: the word is guarded by one of the shared ``BurstRecordLocks``,
/// chosen by the record's address, and the tasks that await a ticket wait in that lock's table,
/// not in the record. The single shells' records know their owner, for
/// ``TicketOwner/synchronize(_:)``: an ``OwnedBurstRecord``, the one subclass.
@usableFromInline
class BurstRecord: @unchecked Sendable {
  // Sound as `@unchecked Sendable`: `word` is only read or written while the record's lock in
  // `BurstRecordLocks` is held (every access goes through `withWord` or `withLock`), and that
  // lock depends only on the record's address, which is fixed for its whole life.

  /// The record's state. Unchecked by exclusivity enforcement: the lock makes every access
  /// exclusive already, and a dynamic check would add a runtime call to each one.
  @exclusivity(unchecked) final var word: BurstRecordWord

  /// A record for a burst whose tickets learn every preemption as it happens (keyed shells).
  @usableFromInline
  init(keepsAll: Bool) {
    word = BurstRecordWord(keepsAll: keepsAll)
  }

  /// Runs `body` on the word under the record's lock.
  @inline(__always)
  final func withWord<Result>(_ body: (inout BurstRecordWord) -> Result) -> Result {
    let stripe = BurstRecordLocks.stripe(for: self)
    stripe.acquire()
    defer { stripe.release() }
    return body(&word)
  }

  /// Runs `change` on the word under the record's lock; when tasks wait on the record, resumes
  /// those whose outcome is now known, once the lock is released.
  @inline(__always)
  final func update(_ change: (inout BurstRecordWord) -> Void) {
    let waiting = withWord { word in
      change(&word)
      return word.hasWaiters
    }
    if waiting { resumeResolved() }
  }

  /// Records that every non-leading submission below `seq` was preempted, without resuming
  /// anybody: called under an instance's lock. Returns whether tasks wait on the record, to
  /// resume with ``resumeResolved()`` once that lock is released.
  @usableFromInline
  final func notePreempted(below seq: UInt64) -> Bool {
    withWord { word in
      word.notePreempted(below: seq)
      return word.hasWaiters
    }
  }

  /// Resumes the waiters whose outcome is known; outside any instance's lock.
  @usableFromInline @inline(never)
  final func resumeResolved() {
    let resolved = withLock { $0.takeResolved() }
    for (continuation, outcome) in resolved { continuation.resume(returning: outcome) }
  }

  /// The burst ended; `lastSeq` runs or is cancelled, every other submission was preempted.
  @usableFromInline
  final func close(lastSeq: UInt64?) {
    update { $0.close(lastSeq: lastSeq) }
  }

  /// The last submission of the ended burst resolved with `outcome`.
  @usableFromInline
  final func finish(_ outcome: DelayOutcome) {
    update { $0.lastOutcome = outcome }
  }

  /// The burst ended by cancellation: ``close(lastSeq:)`` then ``finish(_:)`` with
  /// `.cancelled`, under one acquisition of the lock.
  @usableFromInline
  final func closeCancelled(lastSeq: UInt64?) {
    update {
      $0.close(lastSeq: lastSeq)
      $0.lastOutcome = .cancelled
    }
  }

  /// The leading submission's task has returned.
  @usableFromInline
  final func finishLeading() {
    update { $0.leadingFinished = true }
  }

  /// Runs `body` under the record's lock with the whole state: the word, and the tasks that
  /// wait on the record (taken from the lock's table, and put back if any are left).
  final func withLock<Result>(_ body: (inout BurstRecordState) throws -> Result) rethrows
    -> Result
  {
    let id = ObjectIdentifier(self)
    let stripe = BurstRecordLocks.stripe(for: self)
    stripe.acquire()
    defer { stripe.release() }
    let waiters = word.hasWaiters ? stripe.table.pointee.removeValue(forKey: id) ?? [] : []
    var state = BurstRecordState(word: word, waiters: waiters)
    defer {
      state.word.hasWaiters = !state.waiters.isEmpty
      if state.word.hasWaiters { stripe.table.pointee[id] = state.waiters }
      word = state.word
    }
    return try body(&state)
  }

  /// The outcome of a submission as far as the record knows it now; `nil` while it is open.
  final func knownOutcome(of seq: UInt64, leading: Bool) -> DelayOutcome? {
    withWord { $0.outcome(of: seq, leading: leading) }
  }

  /// The owner to ask for the preemptions the record has not been told yet; `nil` for records
  /// that learn every preemption at once.
  var ticketOwner: (any TicketOwner)? { nil }

  final func outcome(of seq: UInt64, leading: Bool) async -> DelayOutcome {
    if let known = knownOutcome(of: seq, leading: leading) { return known }
    await ticketOwner?.synchronize(self)
    return await withCheckedContinuation { continuation in
      let known = withLock { state in
        let known = state.word.outcome(of: seq, leading: leading)
        if known == nil { state.waiters.append((seq, leading, continuation)) }
        return known
      }
      if let known { continuation.resume(returning: known) }
    }
  }
}
