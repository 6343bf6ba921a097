/// A task that runs when its debouncer decides; synchronous, as the GCD-style idioms take it.
public typealias Work = @Sendable () -> Void
/// The same for the Swift-concurrency idioms, so the actor gets its own closure type unconverted.
public typealias AsyncWork = @Sendable () async -> Void

/// A debouncer called from plain threads: each `submit` preempts the pending one, and only the
/// last work of a burst runs, `delay` after the last call.
public protocol SyncDebouncer: Sendable {
  init(delay: Duration)
  func submit(_ work: @escaping Work)
  /// Runs what is due when the contender has no timer of its own (the lower bound); else nothing.
  func settle()
}

/// A debouncer called with `await`, from tasks.
public protocol AsyncDebouncer: Sendable {
  init(delay: Duration)
  func submit(_ work: @escaping AsyncWork) async
}

extension SyncDebouncer {
  public func settle() {}
}

extension Duration {
  /// Whole nanoseconds; the benchmarks use delays of a few seconds at most.
  public var nanoseconds: Int64 {
    components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
  }
}
