/// The record of a single shell's burst: it knows its owner, which tells it the preemptions
/// made before a task started to await one of its tickets (see ``TicketLedger``).
@usableFromInline
final class OwnedBurstRecord: BurstRecord, @unchecked Sendable {
  // Sound as `@unchecked Sendable`: `owner` is set once in `init`, and the runtime loads a
  // weak reference atomically; the rest is `BurstRecord`'s.

  /// A ``TicketOwner``; kept as `AnyObject` so that the inlinable submission path, which
  /// creates records in client code, need not see the protocol.
  private weak var owner: AnyObject?

  @usableFromInline
  init(owner: AnyObject, keepsAll: Bool) {
    self.owner = owner
    super.init(keepsAll: keepsAll)
  }

  override var ticketOwner: (any TicketOwner)? { owner as? any TicketOwner }
}
