extension PasscodeLockout {
  /// Creates a lockout on real time whose `onChange` runs on the main actor, so that it may
  /// update `@MainActor` state directly.
  ///
  /// ```swift
  /// @MainActor final class KeypadModel {
  ///   var isEnabled = true
  ///   lazy var lockout = PasscodeLockout(maxFailures: 3, callbackActor: MainActor.shared) {
  ///     [weak self] state in self?.isEnabled = state != .lockedOut
  ///   }
  /// }
  /// ```
  ///
  /// Callbacks are enqueued on the main queue in the order of the changes and run there, one at
  /// a time, isolated to the main actor. Otherwise the same as
  /// ``init(maxFailures:window:lockoutDuration:callbackQueue:onChange:)``.
  public convenience init(
    maxFailures: Int = 3, window: Duration = .seconds(60),
    lockoutDuration: Duration = .seconds(60), callbackActor: MainActor,
    onChange: @escaping @MainActor @Sendable (State) -> Void
  ) {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: [lockoutDuration],
      timing: .realTime, callbackQueue: MainActorCallback.queue,
      onChange: MainActorCallback.wrap(onChange))
  }

  /// Creates a lockout that follows `clock` and calls `onChange` on the main actor.
  public convenience init<C: Clock>(
    maxFailures: Int = 3, window: Duration = .seconds(60),
    lockoutDuration: Duration = .seconds(60), clock: C, callbackActor: MainActor,
    onChange: @escaping @MainActor @Sendable (State) -> Void
  ) where C.Duration == Duration {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: [lockoutDuration],
      timing: .clock(clock), callbackQueue: MainActorCallback.queue,
      onChange: MainActorCallback.wrap(onChange))
  }

  /// Creates an escalating lockout on real time that calls `onChange` on the main actor.
  public convenience init(
    maxFailures: Int = 3, window: Duration = .seconds(60), lockoutDurations: [Duration],
    callbackActor: MainActor, onChange: @escaping @MainActor @Sendable (State) -> Void
  ) {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: lockoutDurations,
      timing: .realTime, callbackQueue: MainActorCallback.queue,
      onChange: MainActorCallback.wrap(onChange))
  }

  /// Creates an escalating lockout that follows `clock` and calls `onChange` on the main actor.
  public convenience init<C: Clock>(
    maxFailures: Int = 3, window: Duration = .seconds(60), lockoutDurations: [Duration],
    clock: C, callbackActor: MainActor, onChange: @escaping @MainActor @Sendable (State) -> Void
  ) where C.Duration == Duration {
    self.init(
      maxFailures: maxFailures, window: window, lockoutDurations: lockoutDurations,
      timing: .clock(clock), callbackQueue: MainActorCallback.queue,
      onChange: MainActorCallback.wrap(onChange))
  }
}
