import Dispatch

/// Reports when a batch of loads has finished: the signal fires once `quietPeriod` has passed
/// since the last ``resourceDidLoad()`` of a batch (or `maxWait` after its first), with the
/// batch's count. The next load starts a new batch.
///
/// ```swift
/// let loaded = AllResourcesLoadedSignal(quietPeriod: .milliseconds(500), maxWait: .seconds(5))
/// for url in urls {
///   session.download(url) { _ in loaded.resourceDidLoad() }
/// }
/// let count = await loaded.allLoaded()   // once no load came for 0.5 s
/// print("\(count) resources loaded")
/// ```
///
/// - Bound: with `maxWait`, no batch lasts longer than `maxWait` from its first load (plus
///   scheduling latency), however dense the loads, and loads that never pause still end a batch
///   each `maxWait`; a load that comes once the batch is due, before its timer fires, is counted
///   in it.
/// - Pending work: one timer at a time, for a batch that is one burst of the rules every queue
///   follows (`.restart`, `maxWait`); each load moves the pending signal. A load and a firing of
///   the timer are decided under one lock, so nothing waits to be performed between them. A
///   pending timer does not keep the signal alive. Releasing the signal cancels the timer: no
///   callback follows, and every ``allLoaded()`` waiter is resumed with the loads counted so far
///   in the unfinished batch.
/// - Callbacks: `onAllLoaded` runs on the main actor with `callbackActor: MainActor.shared`, or
///   on `callbackQueue`, or on a serial queue the signal owns,
///   once per batch and in batch order, never under a lock. A concurrent `callbackQueue` may
///   run them out of order.
/// - Tests: on a ``SchedulingClock`` such as `ManualClock`, `advance(by:)` returns after the
///   callbacks that its timers caused have run. A callback that a method call caused directly is
///   only enqueued, by that call; a serial `callbackQueue` runs it
///   before any later one.
/// - Thread safety: every method may be called from any thread. The signal reads its clock and
///   arms its timer only outside its lock, and enqueues its callbacks, which runs none of them,
///   before it releases the lock, in the order of its changes. So its clock may call back into
///   it.
public final class AllResourcesLoadedSignal: Sendable {
  private let core: AdapterCore<BatchRules>
  let batch: LoadBatch

  /// Creates a signal on real time.
  ///
  /// - Parameters:
  ///   - quietPeriod: The time with no load that ends a batch.
  ///   - maxWait: The longest a batch may last from its first load; `nil` for no bound.
  ///   - callbackQueue: Where `onAllLoaded` runs; `nil` for a serial queue the signal owns.
  ///   - onAllLoaded: Called with the count of each batch when it is signalled.
  /// - Precondition: `quietPeriod` is positive, and so is `maxWait` when given. A zero or
  ///   negative value stops the program with a message naming the parameter, as for every
  ///   adapter's quiet period.
  public convenience init(
    quietPeriod: Duration = .milliseconds(500), maxWait: Duration? = nil,
    callbackQueue: DispatchQueue? = nil,
    onAllLoaded: (@Sendable (_ loadedCount: Int) -> Void)? = nil
  ) {
    self.init(
      quietPeriod: quietPeriod, maxWait: maxWait, timing: .realTime,
      callbackQueue: callbackQueue, onAllLoaded: onAllLoaded)
  }

  /// Creates a signal that follows `clock`; `ManualClock` for tests.
  public convenience init<C: Clock>(
    quietPeriod: Duration = .milliseconds(500), maxWait: Duration? = nil, clock: C,
    callbackQueue: DispatchQueue? = nil,
    onAllLoaded: (@Sendable (_ loadedCount: Int) -> Void)? = nil
  ) where C.Duration == Duration {
    self.init(
      quietPeriod: quietPeriod, maxWait: maxWait, timing: .clock(clock),
      callbackQueue: callbackQueue, onAllLoaded: onAllLoaded)
  }

  init(
    quietPeriod: Duration, maxWait: Duration?, timing: AdapterTiming,
    callbackQueue: DispatchQueue?, onAllLoaded: (@Sendable (_ loadedCount: Int) -> Void)?
  ) {
    requireArgument(
      quietPeriod > .zero,
      "AllResourcesLoadedSignal: quietPeriod must be positive, got \(quietPeriod)")
    if let maxWait {
      requireArgument(
        maxWait > .zero, "AllResourcesLoadedSignal: maxWait must be positive, got \(maxWait)")
    }
    core = AdapterCore(
      label: "AllResourcesLoadedSignal",
      rules: BatchRules(
        quietPeriod: quietPeriod, onAllLoaded: onAllLoaded, timer: AdapterTimer(maxWait: maxWait)),
      timing: timing, callbackQueue: callbackQueue)
    batch = LoadBatch(state: core.state)
  }

  deinit {
    batch.release()
  }

  /// Counts a load in the current batch (starting one if none is open) and moves the signal to
  /// `quietPeriod` from now, within the batch's `maxWait`.
  public func resourceDidLoad() {
    core.update { rules, reading in load(&rules, reading: reading) }
  }

  /// A load, under the lock (the race tests play it while a firing waits for the lock).
  func load(_ rules: inout BatchRules, reading: Duration) {
    rules.load(at: reading)
  }

  /// Returns the count of the last signalled batch at once if no load came after it; otherwise
  /// suspends until the current batch is signalled and returns its count.
  ///
  /// Before any load, it waits for the first batch. Any number of tasks may wait at once; each
  /// gets the count. If the wait ends without a signal, because the waiting task is cancelled
  /// or the signal is released, it returns the loads counted so far in the unfinished batch.
  /// A waiting task does not keep the signal alive: the call gives up its reference to it.
  public consuming func allLoaded() async -> Int {
    let batch = self.batch
    _ = consume self
    return await batch.allLoaded()
  }

  /// The loads counted in the current batch; 0 right after a signal.
  public var loadedCount: Int {
    batch.state.withLock { $0.count }
  }

  /// The tasks suspended in ``allLoaded()``, for tests.
  var waiterCount: Int {
    batch.state.withLock { $0.waiters.count }
  }

  // The core's parts, for the race tests.
  var timer: any BurstTimer { core.timer }
  var timing: AdapterTiming { core.timing }
}
