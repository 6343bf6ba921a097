@testable import DelayedPreemptiveDispatchPostgres

/// A one-way signal between a test and a handler: closed until ``open()``, then open for good.
final class Latch: Sendable {
  private let state = Locked(false)

  var isOpen: Bool { state.withLock { $0 } }

  func open() {
    state.withLock { $0 = true }
  }

  /// Returns once the latch is open; throws `CancellationError` if the task is cancelled first.
  func wait() async throws {
    while !isOpen { try await Task.sleep(for: .milliseconds(10)) }
  }
}
