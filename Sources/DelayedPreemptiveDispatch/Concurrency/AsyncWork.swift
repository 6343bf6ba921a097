/// A task of the actor, wrapped so that storing it in the generic state machine costs no
/// reabstraction thunk (a bare closure stored as a generic value allocates one per store).
@usableFromInline
struct AsyncWork: Sendable {
  @usableFromInline let run: @Sendable () async -> Void

  @inlinable init(run: @escaping @Sendable () async -> Void) {
    self.run = run
  }
}
