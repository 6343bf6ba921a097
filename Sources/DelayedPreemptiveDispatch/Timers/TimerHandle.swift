import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Cancels an armed timer; a timer that already fired or has no cancellation ignores it.
@usableFromInline
struct TimerHandle: Sendable {
  @usableFromInline let cancelAction: (@Sendable () -> Void)?

  /// A timer that cannot be cancelled (a ``SchedulingClock`` keeps its own list).
  @usableFromInline static let none = TimerHandle(cancelAction: nil)

  @usableFromInline
  init(cancelAction: (@Sendable () -> Void)?) {
    self.cancelAction = cancelAction
  }

  @inlinable
  func cancel() {
    cancelAction?()
  }
}
