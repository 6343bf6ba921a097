/// A task of the queue, wrapped so that storing it in the generic state machine costs no
/// reabstraction thunk (a bare closure stored as a generic value allocates one per store).
struct SyncWork: Sendable {
  let run: @Sendable () -> Void
}

/// A task of the actor; see ``SyncWork``.
struct AsyncWork: Sendable {
  let run: @Sendable () async -> Void
}
