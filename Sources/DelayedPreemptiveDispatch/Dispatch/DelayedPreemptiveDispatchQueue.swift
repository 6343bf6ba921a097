import Dispatch

#if canImport(FoundationEssentials)
  import FoundationEssentials  // TimeInterval
#else
  import Foundation  // TimeInterval
#endif

/// Runs a task once a quiet period has passed: each `delay` preempts the pending submission, and
/// only the last task of a burst runs, once, on a serial dispatch queue.
///
/// ```swift
/// let saver = DelayedPreemptiveDispatchQueue(label: "autosave") { document.save() }
/// textView.onChange = { saver.delay(0.5) }   // saves 0.5 s after the last keystroke
/// ```
///
/// - Pending work: a burst starts with the first `delay` while idle and ends when its task runs
///   (at the deadline, or on ``flush()``) or is cancelled (``cancel()``, or the release of the
///   last reference). Every submission resolves exactly once; see ``DelayTicket``.
/// - Where tasks run: on a serial `DispatchQueue` named `label` that targets `target`. Tasks of
///   one instance never overlap. A task may call ``delay(_:task:)`` on its own queue, which
///   starts a new burst.
/// - Timers: one live timer per instance, never one per call. In real time it is an
///   `asyncAfter` deadline on the monotonic clock; with `init(clock:)`, it sleeps on that clock.
///   A `DispatchGroup` tracks bursts and runs, which is what ``wait(timeout:)`` waits on.
/// - Memory: a pending timer does not keep the queue alive. Releasing the last reference
///   cancels the pending burst and frees the task.
/// - Thread safety: every method may be called from any thread, at any time.
public final class DelayedPreemptiveDispatchQueue: Sendable {
  typealias Shell = DispatchShell<SingleLine<SyncWork>>
  private static let line = SingleLine<SyncWork>.LineID()

  private let shell: Shell
  /// The queue targets `.main`: waiting for it on the main queue would never return.
  private let targetsMain: Bool

  /// Creates a queue whose timers follow real time (`DispatchTime`, `asyncAfter`).
  ///
  /// - Parameters:
  ///   - label: The label of the serial queue tasks run on.
  ///   - qos: The quality of service of that queue.
  ///   - target: The queue it targets; `nil` targets the global concurrent queue of `qos`.
  ///   - options: Deadline policy, `maxWait`, `maxSubmissions`, `leading`, `minimumSpacing` and
  ///     tolerance for every burst.
  ///   - task: The task to run; a `delay` with a task replaces it.
  public init(
    label: String = "DelayedPreemptiveDispatchQueue", qos: DispatchQoS = .unspecified,
    target: DispatchQueue? = nil, options: DelayOptions = DelayOptions(),
    task: (@Sendable () -> Void)? = nil
  ) {
    (shell, targetsMain) = Self.makeShell(
      label: label, qos: qos, target: target, timer: DispatchTimeTimer(), options: options,
      task: task)
  }

  /// Creates a queue whose timers sleep on `clock`; with `ManualClock`, time moves only when a
  /// test advances it. Tasks still run on the serial dispatch queue.
  public init<C: Clock>(
    label: String = "DelayedPreemptiveDispatchQueue", qos: DispatchQoS = .unspecified,
    target: DispatchQueue? = nil, clock: C, options: DelayOptions = DelayOptions(),
    task: (@Sendable () -> Void)? = nil
  ) where C.Duration == Duration {
    (shell, targetsMain) = Self.makeShell(
      label: label, qos: qos, target: target, timer: ClockTimer(clock: clock), options: options,
      task: task)
  }

  /// A queue on `timer`, for tests that fire its timer by hand.
  init(label: String, target: DispatchQueue?, timer: any BurstTimer, options: DelayOptions) {
    (shell, targetsMain) = Self.makeShell(
      label: label, qos: .unspecified, target: target, timer: timer, options: options, task: nil)
  }

  /// One line on a serial queue: its one worker runs the tasks there, the timer delivers
  /// there too and runs the due task in its own block.
  private static func makeShell(
    label: String, qos: DispatchQoS, target: DispatchQueue?, timer: any BurstTimer,
    options: DelayOptions, task: (@Sendable () -> Void)?
  ) -> (Shell, targetsMain: Bool) {
    let queue = makeSerialQueue(label: label, qos: qos, target: target)
    var driver = Shell.Driver(
      options: options, maxConcurrentTasks: 1, keepsLastWork: true, tracking: .onDemand,
      instance: "DelayedPreemptiveDispatchQueue")
    driver.installLine(Self.line, work: task.map(SyncWork.init))
    let shell = Shell(
      driver: driver, runQueue: queue, timerQueue: queue, timer: timer, drainsOnFire: false,
      runsWorkerInline: true, tolerance: options.tolerance, task: { _, work in work.run() })
    queue.setSpecific(key: QueueIdentity.key, value: ObjectIdentifier(shell))
    return (shell, target.map(QueueIdentity.isMainQueue) ?? false)
  }

  deinit {
    shell.release()
  }

  /// Submits `task` (or the task given last, when `nil`) to run `seconds` from now, preempting
  /// the pending submission of the burst.
  ///
  /// Returns at once, from any thread. Under ``DeadlinePolicy/extend`` the deadline only moves
  /// later; under ``DeadlinePolicy/restart`` it becomes now + `seconds`. Zero or a negative
  /// value means "due now"; a delay beyond the monotonic clock's range (centuries) saturates to
  /// "never, unless flushed". With no task ever given, the ticket is `.cancelled` at once and
  /// nothing runs.
  ///
  /// - Precondition: `seconds` is finite.
  @discardableResult
  public func delay(_ seconds: TimeInterval, task: (@Sendable () -> Void)? = nil) -> DelayTicket {
    shell.submit(
      Self.line,
      .nanoseconds(Duration.checkedSeconds(seconds, parameter: "delay(_:task:): seconds")),
      work: task.map(SyncWork.init))
  }

  /// Submits `task` (or the task given last, when `nil`) to run `duration` from now; the same as
  /// ``delay(_:task:)`` with a `Duration`.
  @discardableResult
  public func delay(for duration: Duration, task: (@Sendable () -> Void)? = nil) -> DelayTicket {
    shell.submit(Self.line, .duration(duration), work: task.map(SyncWork.init))
  }

  /// Ends the pending burst without running it: its submissions resolve `.cancelled`, and its
  /// timer can no longer affect a later burst, so a `delay` after `cancel()` starts fresh.
  ///
  /// A task that had already started (its timer or ``flush()`` had taken it) still runs to its
  /// end. The task stays the "last given" one for later `delay(task: nil)` calls.
  public func cancel() {
    shell.cancel(Self.line)
  }

  /// Runs the pending task at once, asynchronously on the queue, and ends the burst. Does
  /// nothing when idle. A `delay` after `flush()` returns starts a new burst.
  public func flush() {
    shell.flush(Self.line)
  }

  /// Whether a burst is pending: submitted, and neither run nor cancelled yet. A task that is
  /// running does not count; use ``wait(timeout:)`` to wait for it.
  public var isPending: Bool {
    shell.isPending(Self.line)
  }

  /// Blocks until no burst is pending and no task is running, or until `timeout`.
  ///
  /// Graceful shutdown is `flush()` then `wait()`: the flush starts the pending task at once,
  /// and the wait returns once it (and any task already running) has returned.
  ///
  /// - Precondition: not called from the queue's own tasks, where it would wait for itself; and,
  ///   for a queue whose `target` is `.main`, not called on the main queue while the queue is
  ///   busy, since its tasks could then never run. Both stop with a message that says so.
  @discardableResult
  public func wait(timeout: DispatchTime = .distantFuture) -> DispatchTimeoutResult {
    requireArgument(
      DispatchQueue.getSpecific(key: QueueIdentity.key) != ObjectIdentifier(shell),
      "wait(timeout:) was called from a task of the same queue, which would wait for itself; "
        + "call it from outside the queue, or use flush() alone inside a task")
    if shell.group.wait(timeout: .now()) == .success { return .success }
    requireArgument(
      !(targetsMain && QueueIdentity.isOnMainQueue),
      "wait(timeout:) was called on the main queue for a queue whose target is .main while it "
        + "is busy: its tasks could never run; wait from another thread or do not block main")
    return shell.group.wait(timeout: timeout)
  }
}
