/// How the tickets of an ended burst resolve: every submission but `lastSeq` (and a leading
/// one) is preempted; `lastSeq` resolves `.cancelled` now, or `.executed` once its run returns.
@usableFromInline
struct BurstResolution: Sendable {
  /// `nil` for a line without tickets (a stream).
  @usableFromInline let record: BurstRecord?
  @usableFromInline let lastSeq: UInt64?
  @usableFromInline let cancelled: Bool

  @inlinable
  init(record: BurstRecord?, lastSeq: UInt64?, cancelled: Bool) {
    self.record = record
    self.lastSeq = lastSeq
    self.cancelled = cancelled
  }

  /// Resolves the tickets; call outside any lock, since it resumes their waiters.
  @inlinable
  func apply() {
    guard let record else { return }
    if cancelled {
      record.closeCancelled(lastSeq: lastSeq)
    } else {
      record.close(lastSeq: lastSeq)
    }
  }
}
