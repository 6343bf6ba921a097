import Foundation

/// The package's one lock box: a value behind an `NSLock`, read and written only inside
/// ``withLock(_:)``. Its closures are short and never call out to user code or `await`.
///
/// `@unchecked Sendable` is sound because `state` is touched only while `lock` is held, and the
/// lock orders every access (an `NSLock`, which ThreadSanitizer understands).
final class Locked<State>: @unchecked Sendable {
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
