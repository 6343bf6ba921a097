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
/// - Pending work: one timer at a time, a ``DelayedPreemptiveDispatchQueue``; each load
///   preempts the pending signal. A pending timer does not keep the signal alive. Releasing
///   the signal cancels the timer: no callback follows, and every ``allLoaded()`` waiter is
///   resumed with the loads counted so far in the unfinished batch.
/// - Callbacks: `onAllLoaded` runs on `callbackQueue`, or on a serial queue the signal owns,
///   once per batch and in batch order, never under a lock. A concurrent `callbackQueue` may
///   run them out of order.
/// - Thread safety: every method may be called from any thread.
public final class AllResourcesLoadedSignal: Sendable {
  private let batch = LoadBatch()
  private let quietPeriod: Duration
  private let timer: DelayedPreemptiveDispatchQueue
  private let callbacks: CallbackQueue
  private let onAllLoaded: (@Sendable (_ loadedCount: Int) -> Void)?

  /// Creates a signal on real time.
  ///
  /// - Parameters:
  ///   - quietPeriod: The time with no load that ends a batch.
  ///   - maxWait: The longest a batch may last from its first load; `nil` for no bound.
  ///   - callbackQueue: Where `onAllLoaded` runs; `nil` for a serial queue the signal owns.
  ///   - onAllLoaded: Called with the count of each batch when it is signalled.
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

  private init(
    quietPeriod: Duration, maxWait: Duration?, timing: AdapterTiming,
    callbackQueue: DispatchQueue?, onAllLoaded: (@Sendable (_ loadedCount: Int) -> Void)?
  ) {
    self.quietPeriod = quietPeriod
    timer = timing.makeQueue(
      label: "AllResourcesLoadedSignal.timer",
      options: DelayOptions(deadlinePolicy: .restart, maxWait: maxWait))
    callbacks = CallbackQueue(given: callbackQueue, label: "AllResourcesLoadedSignal.callbacks")
    self.onAllLoaded = onAllLoaded
  }

  deinit {
    batch.release()
  }

  /// Counts a load in the current batch (starting one if none is open) and moves the signal to
  /// `quietPeriod` from now, within the batch's `maxWait`.
  public func resourceDidLoad() {
    batch.state.withLock { state in
      state.count += 1
      state.generation &+= 1
      let generation = state.generation
      timer.delay(for: quietPeriod) { [weak self] in self?.timerFired(generation: generation) }
    }
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

  private func timerFired(generation: UInt64) {
    let signalled = batch.state.withLock { state -> (Int, [CheckedContinuation<Int, Never>])? in
      guard generation == state.generation else { return nil }
      let (count, waiters) = LoadBatch.signal(&state)
      if let onAllLoaded { callbacks.send { onAllLoaded(count) } }
      return (count, waiters)
    }
    guard let (count, waiters) = signalled else { return }
    for waiter in waiters { waiter.resume(returning: count) }
  }
}
