import Dispatch

/// Callbacks for the main actor: the adapters enqueue them on the main queue, in the order of
/// the changes they report, and each runs isolated to the main actor there.
enum MainActorCallback {
  /// The queue a main-actor callback is enqueued on: the main queue runs on the main actor.
  static var queue: DispatchQueue { .main }

  /// Wraps `callback` to be enqueued on ``queue``.
  static func wrap<Value: Sendable>(
    _ callback: @escaping @MainActor @Sendable (Value) -> Void
  ) -> @Sendable (Value) -> Void {
    { value in MainActor.assumeIsolated { callback(value) } }
  }

  /// Wraps `callback` to be enqueued on ``queue``.
  static func wrap(_ callback: @escaping @MainActor @Sendable () -> Void) -> @Sendable () -> Void {
    { MainActor.assumeIsolated { callback() } }
  }
}
