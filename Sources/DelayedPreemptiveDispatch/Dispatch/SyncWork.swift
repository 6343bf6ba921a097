import Dispatch

#if canImport(FoundationEssentials)
  import FoundationEssentials  // TimeInterval
#else
  import Foundation  // TimeInterval
#endif

/// A task of the queue, wrapped so that storing it in the generic state machine costs no
/// reabstraction thunk (a bare closure stored as a generic value allocates one per store).
struct SyncWork: Sendable {
  let run: @Sendable () -> Void
}
