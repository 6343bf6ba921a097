extension AllResourcesLoadedSignal {
  /// Creates a signal on real time whose `onAllLoaded` runs on the main actor, so that it may
  /// update `@MainActor` state directly.
  ///
  /// ```swift
  /// let loaded = AllResourcesLoadedSignal(callbackActor: MainActor.shared) { count in
  ///   spinner.stopAnimating()   // a @MainActor view
  /// }
  /// ```
  ///
  /// Batches are enqueued on the main queue in order and run there, isolated to the main actor.
  public convenience init(
    quietPeriod: Duration = .milliseconds(500), maxWait: Duration? = nil,
    callbackActor: MainActor,
    onAllLoaded: @escaping @MainActor @Sendable (_ loadedCount: Int) -> Void
  ) {
    self.init(
      quietPeriod: quietPeriod, maxWait: maxWait, timing: .realTime,
      callbackQueue: MainActorCallback.queue, onAllLoaded: MainActorCallback.wrap(onAllLoaded))
  }

  /// Creates a signal that follows `clock` and calls `onAllLoaded` on the main actor.
  public convenience init<C: Clock>(
    quietPeriod: Duration = .milliseconds(500), maxWait: Duration? = nil, clock: C,
    callbackActor: MainActor,
    onAllLoaded: @escaping @MainActor @Sendable (_ loadedCount: Int) -> Void
  ) where C.Duration == Duration {
    self.init(
      quietPeriod: quietPeriod, maxWait: maxWait, timing: .clock(clock),
      callbackQueue: MainActorCallback.queue, onAllLoaded: MainActorCallback.wrap(onAllLoaded))
  }
}
