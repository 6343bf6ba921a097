/// Debounces per key in Swift concurrency: the parallel of ``KeyedDelayedPreemptiveDispatchQueue``,
/// with the same rules, generic over its clock.
///
/// ```swift
/// let digests = KeyedDelayedPreemptiveActor<UserID, Void, ContinuousClock>(
///   maxConcurrentTasks: 8
/// ) { user, _ in
///   await mailer.sendDigest(to: user)     // once a user's activity has been quiet for a minute
/// }
/// await digests.delay(user, for: .seconds(60))
/// // When the service stops:
/// await digests.flushAll()
/// await digests.wait()
/// ```
///
/// - Per key: the rules of ``DelayedPreemptiveActor`` with the instance's `options`; a
///   submission for one key never affects another. The task receives the key and the value of
///   its burst's last submission.
/// - Where tasks run: in unstructured tasks, off the actor. Tasks of one key never overlap;
///   tasks of different keys may run at the same time, at most `maxConcurrentTasks` at once
///   when it is given (otherwise at most 64 worker tasks), oldest deadline first. Workers take
///   due tasks in batches of at most 64 when many are due, so that a million due keys cost at
///   least 15,625 actor hops rather than a million (with `cancelsRunningTask`, a worker takes one
///   run per hop). A task may call any method on its own instance.
/// - Timers: one sleeping task (or one ``SchedulingClock`` callback) for the whole instance.
///   With `ManualClock`, `advance` returns once the tasks it made due have returned.
/// - Memory: an idle key holds nothing. The timer holds the actor weakly; releasing the last
///   reference cancels every pending burst, and tasks already running finish.
///
/// `delay`, the timer's firing and the workers' taking of due runs are `@inlinable`, as the keyed
/// queue's are: a client compiles them for its own `Key`, `Value` and clock, so that a
/// submission looks up no generic metadata. Only arming the timer stays generic (once per new
/// earliest deadline, not per call). Everything it does with its driver is the shared actor
/// code of `ActorShell`.
public final actor KeyedDelayedPreemptiveActor<Key: Hashable & Sendable, Value: Sendable, C: Clock>
where C.Duration == Duration {
  @usableFromInline typealias Lines = KeyedLines<Key, Value>

  // What the `@inlinable` paths touch is `@usableFromInline` (an actor's stored properties
  // included); the timer, armed through a non-inlinable entry point, is not.
  @usableFromInline let timer: ClockTimer<C>
  @usableFromInline let timeline: ClockTimeline<C>
  @usableFromInline let tolerance: Duration?
  @usableFromInline let task: @Sendable (Key, Value) async -> Void
  /// `combine`, run in the actor's isolation: never concurrently, and under no lock.
  @usableFromInline let combine: (@Sendable (inout Value, Value) -> Void)?
  @usableFromInline var driver: BurstDriver<Lines>
  @usableFromInline var waiters = ActorWaiters<Key>()
  @usableFromInline var runningTasks: [Key: Task<Void, Never>] = [:]

  /// Creates a keyed actor whose timer sleeps on `clock`.
  ///
  /// - Precondition: `maxConcurrentTasks`, when given, is at least 1.
  public init(
    clock: C, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsRunningTask: false, task: task)
  }

  /// Creates a keyed actor that can cancel a key's stale running task: with
  /// `cancelsRunningTask`, a submission that starts a new burst of a key makes every unfinished
  /// run of that key's earlier bursts stale, the rule of
  /// ``DelayedPreemptiveActor/init(clock:options:cancelsRunningTask:task:)``: the key's running
  /// task is cancelled (through Swift task cancellation, cooperatively), and a run of the key
  /// still queued behind it starts in a cancelled task. Other keys are not affected, and tasks
  /// of one key still never overlap.
  public init(
    clock: C, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    cancelsRunningTask: Bool, task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsRunningTask: cancelsRunningTask, combine: nil, task: task)
  }

  /// Creates a keyed actor whose bursts keep every value: a burst's value starts as its first
  /// submission's, and `combine` merges every later submission of the burst into it, in order.
  /// The rules are those of
  /// ``KeyedDelayedPreemptiveDispatchQueue/init(label:qos:target:options:maxConcurrentTasks:combine:task:)``;
  /// `combine` runs in the actor's isolation, inside `delay`.
  public init(
    clock: C, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    combine: @escaping @Sendable (_ value: inout Value, _ next: Value) -> Void,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsRunningTask: false, combine: combine, task: task)
  }

  private init(
    clock: C, options: DelayOptions, maxConcurrentTasks: Int?, cancelsRunningTask: Bool,
    combine: (@Sendable (inout Value, Value) -> Void)?,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.combine = combine
    timer = ClockTimer(clock: clock)
    timeline = timer.timeline
    tolerance = options.tolerance
    self.task = task
    driver = BurstDriver(
      options: options, maxConcurrentTasks: maxConcurrentTasks,
      cancelsStaleRuns: cancelsRunningTask, keepsEveryValue: combine != nil,
      instance: "KeyedDelayedPreemptiveActor")
  }

  deinit {
    driver.release().performRelease()
  }

  /// Submits `value` for `key`, to run `duration` from now, preempting the key's pending
  /// submission. Zero or negative means "due now".
  @inlinable
  @discardableResult
  public func delay(_ key: Key, for duration: Duration, value: Value) -> DelayTicket {
    guard let combine else { return submit(key, .duration(duration), work: value) }
    return submit(key, .duration(duration), combining: value, with: combine)
  }

  /// A submission that `combine` merges into the key's pending burst. Out of line, so that the
  /// path without `combine`, inlined into the caller, stays a test and one call: the larger
  /// inlined body kept a caller's loop of `await delay(...)` from dropping its hop back to its
  /// own executor between calls (one executor switch more per call).
  @inlinable @inline(never)
  func submit(
    _ key: Key, _ delay: RequestedDelay, combining value: Value,
    with combine: (inout Value, Value) -> Void
  ) -> DelayTicket {
    // One reading of the clock for both: a burst that is due keeps its value, and the
    // submission ends it first (T7).
    let now = timeline.now()
    let merged = BurstDriver<Lines>.merge(
      value, into: driver.takeValueToCombine(key, at: now), with: combine)
    return submit(key, delay, work: merged, at: now)
  }

  /// Ends the key's pending burst without running it; a task that already started runs on.
  public func cancel(_ key: Key) {
    perform(driver.cancel(key))
  }

  /// Cancels every key's pending burst.
  public func cancelAll() {
    perform(driver.cancelAll())
  }

  /// Runs the key's pending task now and returns once it has finished; does nothing when the
  /// key is idle. Called from inside one of this actor's tasks, it returns at once.
  public func flush(_ key: Key) async {
    await flushAndWait(key)
  }

  /// Runs every pending task now and returns once all of them have finished. Called from
  /// inside one of this actor's tasks, it returns at once.
  public func flushAll() async {
    await flushAllAndWait()
  }

  /// Whether the key has a pending burst (a running task does not count).
  public func isPending(_ key: Key) -> Bool {
    driver.isPending(key)
  }

  /// The number of keys with a pending burst.
  public var pendingCount: Int {
    driver.pendingCount
  }

  /// Returns once no key has a pending burst and no task is running. Graceful shutdown is
  /// `await flushAll()` then `await wait()`.
  public func wait() async {
    await wait(until: .idle)
  }

  /// Keys that hold state, and entries in the timer heap; for tests.
  var footprint: (keys: Int, timers: Int) {
    let footprint = driver.footprint
    return (footprint.lines, footprint.timers)
  }
}

extension KeyedDelayedPreemptiveActor where C == ContinuousClock {
  /// Creates a keyed actor that keeps every value of a burst with `combine`, whose timer
  /// follows real time on `ContinuousClock`.
  public init(
    options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    combine: @escaping @Sendable (_ value: inout Value, _ next: Value) -> Void,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: ContinuousClock(), options: options, maxConcurrentTasks: maxConcurrentTasks,
      combine: combine, task: task)
  }

  /// Creates a keyed actor whose timer follows real time on `ContinuousClock`.
  public init(
    options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil,
    task: @escaping @Sendable (Key, Value) async -> Void
  ) {
    self.init(
      clock: ContinuousClock(), options: options, maxConcurrentTasks: maxConcurrentTasks,
      task: task)
  }
}

extension KeyedDelayedPreemptiveActor where Value == Void {
  /// Submits `key` to run `duration` from now; for keys that say it all.
  @inlinable
  @discardableResult
  public func delay(_ key: Key, for duration: Duration) -> DelayTicket {
    delay(key, for: duration, value: ())
  }
}

extension KeyedDelayedPreemptiveActor: ActorShell {}

extension KeyedDelayedPreemptiveActor: TicketOwner {}
