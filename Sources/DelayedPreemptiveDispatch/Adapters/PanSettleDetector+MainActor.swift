extension PanSettleDetector {
  /// Creates a detector on real time whose `onSettle` runs on the main actor, so that it may
  /// update `@MainActor` state directly; with `maxWait`, endless short pans still settle.
  ///
  /// ```swift
  /// let settle = PanSettleDetector(settleDelay: .milliseconds(250), callbackActor: MainActor.shared) {
  ///   mapView.loadTilesForVisibleRegion()   // a @MainActor method
  /// }
  /// ```
  ///
  /// Settles are enqueued on the main queue in order and run there, isolated to the main actor.
  public convenience init(
    settleDelay: Duration = .milliseconds(250), maxWait: Duration? = nil,
    callbackActor: MainActor, onSettle: @escaping @MainActor @Sendable () -> Void
  ) {
    self.init(
      settleDelay: settleDelay, maxWait: maxWait, timing: .realTime,
      callbackQueue: MainActorCallback.queue, onSettle: MainActorCallback.wrap(onSettle))
  }

  /// Creates a detector that follows `clock` and calls `onSettle` on the main actor.
  public convenience init<C: Clock>(
    settleDelay: Duration = .milliseconds(250), maxWait: Duration? = nil, clock: C,
    callbackActor: MainActor, onSettle: @escaping @MainActor @Sendable () -> Void
  ) where C.Duration == Duration {
    self.init(
      settleDelay: settleDelay, maxWait: maxWait, timing: .clock(clock),
      callbackQueue: MainActorCallback.queue, onSettle: MainActorCallback.wrap(onSettle))
  }
}
