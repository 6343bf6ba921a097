/// The one timer of an adapter, as its rules see it: a line of the ``BurstDriver`` with the
/// adapter's options (`.restart`, and `maxWait` for a batch or a run of pans), kept inside the
/// rules, under ``AdapterCore``'s lock.
///
/// A *round* of the adapter (a batch of loads, pans until they settle, a window or a lockout)
/// is one burst of the line: each event asks for a delay from now (``arm(after:at:)``), which
/// moves the burst's deadline, within its `maxWait`, by the rules every queue follows. The end of
/// the burst, by its timer (``fired(generation:at:)``) or by an event that finds it due, is
/// decided in the same critical section as the events around it, and ``takeDue()`` tells the
/// core to apply the rules' `timerDue()` there too. So an event that comes once the round is
/// due, before its timer fires, belongs to that round, and `maxWait` counts from the round's
/// first event, however dense the events.
///
/// Callbacks and resumptions wait here only until the end of the critical section that decided
/// them: the core takes them (``takeCallbacks()``, ``takeAfterLock()``) before it releases the
/// lock. Nothing accumulates from one transition to the next.
struct AdapterTimer: Sendable {
  typealias Lines = SingleLine<Void>

  /// The line's tickets are never awaited (``TicketLedger/Tracking/none``): nothing names them.
  private final class NoTickets: Sendable {}
  private static let owner = NoTickets()
  private static let line = Lines.LineID()

  private var driver: BurstDriver<Lines>
  /// The latest instant seen. Readings are taken before the lock, so a thread may bring an older
  /// one than the last; the adapter keeps its time moving forward.
  private var latest = Duration.zero
  /// The driver ended the round; the core applies the rules' `timerDue()`.
  private var isDue = false
  /// What the driver asked for: the timer to arm and the one to cancel.
  private var effects = BurstEffects()
  private var callbacks: [@Sendable () -> Void] = []
  private var resumptions: [@Sendable () -> Void] = []

  /// A timer whose rounds end at most `maxWait` after their first event; `nil` for no bound.
  init(maxWait: Duration?) {
    driver = BurstDriver(
      options: DelayOptions(deadlinePolicy: .restart, maxWait: maxWait), maxConcurrentTasks: 1,
      keepsLastWork: true, tracking: .none, joinsDueBurst: true, instance: "AdapterTimer")
    driver.installLine(Self.line, work: ())
  }

  /// Takes a clock reading and returns the instant the adapter acts at: never before an earlier
  /// one.
  mutating func observe(_ reading: Duration) -> Duration {
    latest = max(latest, reading)
    return latest
  }

  /// Asks for the timer `delay` after `now`: opens a round if none is open, or else moves the
  /// open round's deadline there, within its `maxWait`. A round that is due by `now` ends at
  /// once, with this event in it (``takeDue()``).
  mutating func arm(after delay: Duration, at now: Duration) {
    var submission = BurstEffects()
    _ = driver.delay(
      Self.line, .duration(delay), now: Self.instant(now), work: (), owner: Self.owner,
      effects: &submission)
    absorb(submission)
  }

  /// Ends the open round without its timer being due.
  mutating func cancel() {
    absorb(driver.cancel(Self.line))
  }

  /// The timer named `generation` fired at `reading`: the round ends if it is due (``takeDue()``);
  /// otherwise the timer is armed again for the round's deadline.
  mutating func fired(generation: UInt64, at reading: Duration) {
    absorb(driver.timerFired(at: Self.instant(observe(reading)), generation: generation))
  }

  /// Enqueues `callback` on the adapter's callback queue, in the order of the changes.
  mutating func send(_ callback: @escaping @Sendable () -> Void) {
    callbacks.append(callback)
  }

  /// Runs `work` after the lock, such as resuming waiters.
  mutating func run(_ work: @escaping @Sendable () -> Void) {
    resumptions.append(work)
  }

  /// Whether the round ended since the last call; the core then applies the rules' `timerDue()`.
  mutating func takeDue() -> Bool {
    defer { isDue = false }
    return isDue
  }

  /// The callbacks decided so far, in order, for the core to enqueue before it releases the lock.
  mutating func takeCallbacks() -> [@Sendable () -> Void] {
    callbacks.take()
  }

  /// What the core does after the lock: arm or cancel a timer, and run `run(_:)`'s work.
  mutating func takeAfterLock() -> (effects: BurstEffects, work: [@Sendable () -> Void]) {
    defer { effects = BurstEffects() }
    return (effects, resumptions.take())
  }

  /// Keeps `handle` as the armed timer's, or returns the handle to cancel.
  mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    driver.install(handle, generation: generation)
  }

  /// The adapter is going away: the open round ends, and the armed timer is to be cancelled.
  mutating func release() -> BurstEffects {
    driver.release()
  }

  /// The armed timer's deadline, on the adapter's time line; for the race tests.
  var armedDeadline: Duration? {
    driver.armedDeadline.map { .nanoseconds(Int64(clamping: $0.nanoseconds)) }
  }

  /// Keeps the timer steps of `next`, and takes the run of a round that ended at once: the
  /// round's end is the rules' `timerDue()`, applied in this critical section.
  private mutating func absorb(_ next: BurstEffects) {
    if let timer = next.timer { effects.timer = timer }
    // Only an installed handle is handed back to cancel, and none is installed while an armed
    // timer waits in `effects`: at most one of the two is set.
    if let cancelled = next.cancelledTimer { effects.cancelledTimer = cancelled }
    guard next.workersToStart > 0 else { return }
    var finished: Lines.LineID?
    while let next = driver.nextRun(finishing: finished).run {
      isDue = true
      finished = next.id
    }
  }

  private static func instant(_ offset: Duration) -> TimelineInstant {
    TimelineInstant(nanoseconds: UInt64(clamping: offset.saturatingNanoseconds))
  }
}
