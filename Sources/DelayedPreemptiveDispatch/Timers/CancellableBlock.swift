import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// A block that a cancellation empties: `asyncAfter` keeps only this small box until its
/// deadline, not what the block captured.
final class CancellableBlock: Sendable {
  private let block: LockBox<(@Sendable () -> Void)?>

  init(_ block: @escaping @Sendable () -> Void) {
    self.block = LockBox(block)
  }

  func run() {
    block.withLock { $0.take() }?()
  }

  func cancel() {
    _ = block.withLock { $0.take() }
  }
}
