import Dispatch

#if canImport(FoundationEssentials)
  import FoundationEssentials  // TimeInterval
#else
  import Foundation  // TimeInterval
#endif

/// Debounces per key, for services: each key (a document, a user, a cache entry) has its own
/// bursts, and one timer serves them all, however many keys are pending.
///
/// ```swift
/// let reindex = KeyedDelayedPreemptiveDispatchQueue<DocumentID, Document>(
///   label: "reindex", maxConcurrentTasks: 4
/// ) { id, document in
///   search.reindex(id, document)        // runs once, 2 s after the document's last edit
/// }
/// func documentDidChange(_ document: Document) {
///   reindex.delay(document.id, 2.0, value: document)
/// }
/// // When the service stops: run what is pending now, and wait for it.
/// reindex.flushAll()
/// reindex.wait()
/// ```
///
/// - Per key: the rules of ``DelayedPreemptiveDispatchQueue`` with the instance's `options`
///   (deadline policy, `maxWait`, `maxSubmissions`, `leading`, `minimumSpacing`, tickets,
///   ``cancel(_:)``, ``flush(_:)``). A submission for one key never preempts, delays or cancels
///   another key. The task receives the key and the value of the burst's last submission (the
///   first's for a `leading` run).
/// - Where tasks run: on `target` (default: the global queue of `qos`); tasks of different keys
///   may run at the same time, tasks of one key never overlap. Due tasks run in batches: a
///   worker block takes up to 64 of them (fewer when few are due) and runs them one after
///   another. At most `maxConcurrentTasks` tasks run at once when it is given; otherwise at most
///   64 workers are in flight and `target` decides how many run in parallel. Due tasks beyond
///   the bound wait their turn, oldest deadline first. A task may submit, cancel or flush any
///   key, its own included; a submission for a key whose task is running starts a new burst
///   whose task runs after the running one returns.
/// - Timers: one for the whole instance, armed for the earliest deadline of all keys. A
///   re-submission that only moves a key's deadline later is a store, not a timer operation.
/// - Memory: a key whose burst has resolved and whose task has returned holds nothing. A
///   pending timer does not keep the instance alive; releasing the last reference cancels every
///   pending burst (running tasks finish).
/// - Shutdown: ``flushAll()`` then ``wait(timeout:)`` loses nothing that was submitted.
/// - Thread safety: every method may be called from any thread, at any time.
public final class KeyedDelayedPreemptiveDispatchQueue<Key: Hashable & Sendable, Value: Sendable>:
  Sendable
{
  @usableFromInline typealias Shell = DispatchShell<KeyedLines<Key, Value>>
  @usableFromInline let core: Shell

  /// Creates a keyed queue whose timer follows real time (`DispatchTime`, `asyncAfter`).
  ///
  /// - Parameters:
  ///   - label: The label of the queue the timer delivers on.
  ///   - qos: The quality of service of the default target and of the timer.
  ///   - target: Where tasks run; `nil` for the global queue of `qos`. A serial queue runs
  ///     them one at a time.
  ///   - options: Deadline policy, `maxWait`, `maxSubmissions`, `leading`, `minimumSpacing` and
  ///     tolerance for every key's bursts.
  ///   - maxConcurrentTasks: The most tasks that run at once; `nil` for no bound of its own.
  ///   - task: Runs with the key and the value of its burst's last submission.
  /// - Precondition: `maxConcurrentTasks`, when given, is at least 1.
  public init(
    label: String = "KeyedDelayedPreemptiveDispatchQueue", qos: DispatchQoS = .unspecified,
    target: DispatchQueue? = nil, options: DelayOptions = DelayOptions(),
    maxConcurrentTasks: Int? = nil, task: @escaping @Sendable (Key, Value) -> Void
  ) {
    core = Self.makeShell(
      label: label, qos: qos, target: target, timer: DispatchTimeTimer(), drainsOnFire: false,
      options: options, maxConcurrentTasks: maxConcurrentTasks, task: task)
  }

  /// Creates a keyed queue whose timer sleeps on `clock`; with `ManualClock`, time moves only
  /// when a test advances it, and `advance` returns once the tasks it made due have returned.
  public init<C: Clock>(
    label: String = "KeyedDelayedPreemptiveDispatchQueue", qos: DispatchQoS = .unspecified,
    target: DispatchQueue? = nil, clock: C, options: DelayOptions = DelayOptions(),
    maxConcurrentTasks: Int? = nil, task: @escaping @Sendable (Key, Value) -> Void
  ) where C.Duration == Duration {
    core = Self.makeShell(
      label: label, qos: qos, target: target, timer: ClockTimer(clock: clock), drainsOnFire: true,
      options: options, maxConcurrentTasks: maxConcurrentTasks, task: task)
  }

  /// Creates a keyed queue whose bursts keep every value: a burst's value starts as its first
  /// submission's, and `combine` merges every later submission of the burst into it, in
  /// order; the task receives the result.
  ///
  /// `combine` runs synchronously inside `delay`, once per submission after the first, never
  /// concurrently for one instance, and never under the lock that the instance's state and
  /// workers need. It does run under the instance's combine gate, a lock that every submission,
  /// `cancel`, `flush` and timer firing of the instance (on any key) takes, so keep it short;
  /// it must not call back into the instance, which would wait for itself. With `combine`, no
  /// submission is preempted: every submission whose value reached a run resolves `.executed`
  /// once that run has returned. With `leading`, the leading run receives the first value alone
  /// and the trailing run the combination of the later ones; a submission that arrives while the
  /// key's task runs starts a new burst with its own value; `cancel` drops the combined value;
  /// `maxSubmissions` bounds how many values one burst combines.
  ///
  /// ```swift
  /// let reindex = KeyedDelayedPreemptiveDispatchQueue<String, [String]>(
  ///   combine: { $0 += $1 }
  /// ) { document, edits in
  ///   print("reindex \(document) after \(edits.count) edits")
  /// }
  /// reindex.delay("readme", 2.0, value: ["title"])
  /// reindex.delay("readme", 2.0, value: ["intro"])  // one reindex, with both edits
  /// ```
  ///
  /// An appending `combine` such as `{ $0 += $1 }` keeps each submission O(1) amortised: the
  /// burst's value is merged in place, never copied per submission.
  public init(
    label: String = "KeyedDelayedPreemptiveDispatchQueue", qos: DispatchQoS = .unspecified,
    target: DispatchQueue? = nil, options: DelayOptions = DelayOptions(),
    maxConcurrentTasks: Int? = nil,
    combine: @escaping @Sendable (_ value: inout Value, _ next: Value) -> Void,
    task: @escaping @Sendable (Key, Value) -> Void
  ) {
    core = Self.makeShell(
      label: label, qos: qos, target: target, timer: DispatchTimeTimer(), drainsOnFire: false,
      options: options, maxConcurrentTasks: maxConcurrentTasks, combine: combine, task: task)
  }

  /// Creates a keyed queue that keeps every value of a burst (see
  /// ``init(label:qos:target:options:maxConcurrentTasks:combine:task:)``), with its timer on
  /// `clock`.
  public init<C: Clock>(
    label: String = "KeyedDelayedPreemptiveDispatchQueue", qos: DispatchQoS = .unspecified,
    target: DispatchQueue? = nil, clock: C, options: DelayOptions = DelayOptions(),
    maxConcurrentTasks: Int? = nil,
    combine: @escaping @Sendable (_ value: inout Value, _ next: Value) -> Void,
    task: @escaping @Sendable (Key, Value) -> Void
  ) where C.Duration == Duration {
    core = Self.makeShell(
      label: label, qos: qos, target: target, timer: ClockTimer(clock: clock), drainsOnFire: true,
      options: options, maxConcurrentTasks: maxConcurrentTasks, combine: combine, task: task)
  }

  /// A line per key: workers run due tasks on `target` (or the global queue of `qos`), and
  /// the timer delivers on a serial queue of its own that targets it.
  static func makeShell(
    label: String, qos: DispatchQoS, target: DispatchQueue?, timer: any BurstTimer,
    drainsOnFire: Bool, options: DelayOptions, maxConcurrentTasks: Int?,
    combine: (@Sendable (inout Value, Value) -> Void)? = nil,
    task: @escaping @Sendable (Key, Value) -> Void
  ) -> Shell {
    let runQueue = target ?? globalQueue(qos: qos)
    return Shell(
      driver: Shell.Driver(
        options: options, maxConcurrentTasks: maxConcurrentTasks, keepsEveryValue: combine != nil,
        instance: "KeyedDelayedPreemptiveDispatchQueue"),
      runQueue: runQueue, timerQueue: DispatchQueue(label: label, qos: qos, target: runQueue),
      timer: timer, drainsOnFire: drainsOnFire, runsWorkerInline: false,
      tolerance: options.tolerance, combine: combine, task: task)
  }

  deinit {
    core.release()
  }

  /// Submits `value` for `key`, to run `seconds` from now, preempting the key's pending
  /// submission. Returns at once, from any thread; zero or negative means "due now".
  ///
  /// - Precondition: `seconds` is finite.
  @discardableResult
  @inlinable
  public func delay(_ key: Key, _ seconds: TimeInterval, value: Value) -> DelayTicket {
    core.delay(
      key,
      .nanoseconds(Duration.checkedSeconds(seconds, parameter: "delay(_:_:value:): seconds")),
      work: value)
  }

  /// Submits `value` for `key`, to run `duration` from now; the same as
  /// ``delay(_:_:value:)`` with a `Duration`.
  @discardableResult
  @inlinable
  public func delay(_ key: Key, for duration: Duration, value: Value) -> DelayTicket {
    core.delay(key, .duration(duration), work: value)
  }

  /// Ends the key's pending burst without running it; its submissions resolve `.cancelled`. A
  /// task of the key that already started runs to its end.
  @inlinable
  public func cancel(_ key: Key) {
    core.cancel(key)
  }

  /// Cancels every key's pending burst.
  public func cancelAll() {
    core.cancelAll()
  }

  /// Runs the key's pending task at once (after a task of the key that is running) and ends
  /// its burst; does nothing when the key is idle.
  @inlinable
  public func flush(_ key: Key) {
    core.flush(key)
  }

  /// Runs every pending task now. Followed by ``wait(timeout:)``, a graceful shutdown.
  public func flushAll() {
    core.flushAll()
  }

  /// Whether the key has a pending burst (a running task does not count).
  @inlinable
  public func isPending(_ key: Key) -> Bool {
    core.isPending(key)
  }

  /// The number of keys with a pending burst.
  public var pendingCount: Int {
    core.pendingCount
  }

  /// Blocks until no key has a pending burst and no task is running, or until `timeout`.
  ///
  /// - Precondition: not called from the instance's own tasks, where it would wait for itself;
  ///   that stops with a message that says so.
  @discardableResult
  public func wait(timeout: DispatchTime = .distantFuture) -> DispatchTimeoutResult {
    requireArgument(
      !WorkerMark.isRunning(core),
      "wait(timeout:) was called from a task of the same keyed queue, which would wait for "
        + "itself; call it from outside the queue")
    return core.group.wait(timeout: timeout)
  }

  /// Keys that hold state, and entries in the timer heap; for tests.
  var footprint: (keys: Int, timers: Int) {
    let footprint = core.footprint
    return (footprint.lines, footprint.timers)
  }
}

extension KeyedDelayedPreemptiveDispatchQueue where Value == Void {
  /// Submits `key` to run `seconds` from now; for keys that say it all.
  @discardableResult
  @inlinable
  public func delay(_ key: Key, _ seconds: TimeInterval) -> DelayTicket {
    delay(key, seconds, value: ())
  }

  /// Submits `key` to run `duration` from now; for keys that say it all.
  @discardableResult
  @inlinable
  public func delay(_ key: Key, for duration: Duration) -> DelayTicket {
    delay(key, for: duration, value: ())
  }
}
