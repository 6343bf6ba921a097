/// The receipt of one submission: await ``outcome`` to learn how it resolved.
///
/// A ticket costs no allocation: it refers to a record shared by its whole burst. Keeping or
/// discarding it changes nothing for the queue or actor; awaiting it is optional.
///
/// ```swift
/// let ticket = queue.delay(0.3) { search(text) }
/// if await ticket.outcome == .executed { print("searched for \(text)") }
/// ```
public struct DelayTicket: Sendable {
  // `@usableFromInline`, with inlinable inits, so that a client that drops a ticket (the stream
  // makes one per element) does not call out to build and destroy it.
  @usableFromInline enum Storage: Sendable {
    case resolved(DelayOutcome)
    case pending(BurstRecord, UInt64, leading: Bool)
  }

  @usableFromInline let storage: Storage

  @inlinable
  init(record: BurstRecord, seq: UInt64, leading: Bool) {
    storage = .pending(record, seq, leading: leading)
  }

  @inlinable
  init(resolved outcome: DelayOutcome) {
    storage = .resolved(outcome)
  }

  /// The record and sequence number behind a pending ticket, for the driver's tests.
  var record: (BurstRecord, UInt64)? {
    guard case .pending(let record, let seq, _) = storage else { return nil }
    return (record, seq)
  }

  /// The outcome as far as it is known now, without waiting; `nil` while open.
  var knownOutcome: DelayOutcome? {
    switch storage {
    case .resolved(let outcome): return outcome
    case .pending(let record, let seq, let leading):
      return record.knownOutcome(of: seq, leading: leading)
    }
  }

  /// Suspends until this submission has resolved. After `.executed`, the task has returned.
  ///
  /// A `.preempted` outcome is reported as soon as a later submission of the same burst exists;
  /// `.executed` once the task has returned; `.cancelled` once `cancel()` or the release of the
  /// owner ended the burst. Cancelling the awaiting task does not end the wait early.
  public var outcome: DelayOutcome {
    get async {
      switch storage {
      case .resolved(let outcome): return outcome
      case .pending(let record, let seq, let leading):
        return await record.outcome(of: seq, leading: leading)
      }
    }
  }
}
