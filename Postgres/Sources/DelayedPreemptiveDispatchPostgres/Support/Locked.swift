import Foundation

/// The package's one lock box: a value behind an `NSLock`, read and written only inside
/// ``withLock(_:)``. Its closures are short and never call out to user code or `await`.
///
/// It is `Sendable` only where `State` is: the lock orders every access to `state` (an `NSLock`,
/// which ThreadSanitizer understands), but a non-`Sendable` state handed out of ``withLock(_:)``
/// could still be shared between threads, so the box of one is not `Sendable`. (swift-nio's
/// `NIOLockedValueBox` makes the same choice.)
final class Locked<State> {
  private let lock = NSLock()
  private var state: State

  init(_ state: State) {
    self.state = state
  }

  func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&state)
  }
}

/// Sound for every `State` that is `Sendable`: `state` is read and written only while `lock` is
/// held.
extension Locked: @unchecked Sendable where State: Sendable {}
