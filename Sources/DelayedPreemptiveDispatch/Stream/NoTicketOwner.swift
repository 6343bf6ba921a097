/// The owner the stream's driver passes for tickets it never makes.
@usableFromInline let noTicketOwner = NoTicketOwner()

/// See ``noTicketOwner``.
@usableFromInline final class NoTicketOwner: Sendable {
  @usableFromInline init() {}
}
