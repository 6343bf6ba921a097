/// What an adapter decides under its lock for its timer queue and its callbacks, performed after
/// the lock in the order decided; and the adapter rules that its queue cannot express.
///
/// An adapter's rules append to the plan while they change state; ``AdapterCore`` performs the
/// plan after the lock. So no adapter calls its queue, and no callback is enqueued, under the
/// lock, and still the queue sees the submissions, and the callback queue the callbacks, in the
/// order of the state changes. One thread performs at a time: a thread that finds another one
/// performing leaves its actions to it (``claim()``, ``next()``).
///
/// The queue applies `maxWait` (the plan's, in its options) to each of its bursts. An adapter's
/// *round* (a batch of loads, a run of pans until it settles) is one such burst, except when an
/// event races a firing: it lands after the queue ended the burst and before the firing's task
/// took the adapter's lock. The event then counts in the round, and its submission starts a new
/// burst of the queue, whose `maxWait` counts from that submission, not from the round's first
/// event; a dense stream of racing events could so push the bound back without end. The queue
/// cannot tell the adapter that a burst ended; the task of each submission tells it which
/// submission it was, and the plan numbers them. A firing whose submission is not the latest one
/// was raced (``fired(_:at:)``):
/// - once the round's `maxWait` has passed, the firing ends the round, racing events included,
///   and cancels the burst they started;
/// - before, the round goes on in that burst, with every delay capped at the round's deadline.
///
/// A round's deadline is therefore the one instant an adapter keeps for `maxWait`, and the
/// latest reading (``observe(_:)``) the one clock rule.
struct TimerPlan {
  /// One step to perform after the lock.
  enum Action {
    /// Submit to the timer queue; its task reports `sequence` back when it runs.
    case delay(Duration, sequence: UInt64)
    /// Cancel the timer queue's pending burst.
    case cancel
    /// Enqueue a callback on the callback queue.
    case send(@Sendable () -> Void)
    /// Work that must not run under the lock either, such as resuming waiters.
    case run(@Sendable () -> Void)
  }

  /// The bound of every round; the adapter's queue gets it in its options.
  let maxWait: Duration?
  /// The callbacks of the firing being decided, which its clock awaits: set by ``AdapterCore``.
  var tracking: FiredCallbacks?
  private var actions: [Action] = []
  private var isPerforming = false
  /// The latest clock reading seen. Readings are taken before the lock, so a thread may bring an
  /// older one than the last; the plan keeps time moving forward.
  private var latest = Duration.zero
  /// Names the latest submission or cancellation.
  private var sequence: UInt64 = 0
  /// The delay the latest submission asked for, to carry a round over a raced firing.
  private var lastDelay = Duration.zero
  /// When the open round must end by `maxWait`; `nil` with no bound or no round open.
  private var deadline: Duration?
  /// The deadline of a round that a raced firing carried into a burst of its own.
  private var carriedDeadline: Duration?

  init(maxWait: Duration?) {
    self.maxWait = maxWait
  }

  /// Takes a clock reading and returns the instant the adapter acts at: never before an earlier
  /// one.
  mutating func observe(_ reading: Duration) -> Duration {
    latest = max(latest, reading)
    return latest
  }

  /// Submits a delay of `delay` from `now`, which preempts the pending one; the first since the
  /// round ended opens the round's deadline.
  mutating func arm(after delay: Duration, at now: Duration) {
    if deadline == nil, let maxWait { deadline = now + maxWait }
    lastDelay = delay
    sequence &+= 1
    let capped = carriedDeadline.map { min(delay, $0 - now) } ?? delay
    actions.append(.delay(capped, sequence: sequence))
  }

  /// Cancels the pending burst; a firing it could not stop any more counts as raced.
  mutating func cancel() {
    sequence &+= 1
    actions.append(.cancel)
  }

  /// Enqueues `callback`, which the clock awaits when a firing caused it.
  mutating func send(_ callback: @escaping @Sendable () -> Void) {
    actions.append(.send(tracking.map { $0.track(callback) } ?? callback))
  }

  /// Runs `work` after the lock.
  mutating func run(_ work: @escaping @Sendable () -> Void) {
    actions.append(.run(work))
  }

  /// The task of submission `sequence` ran at `reading`: whether the adapter's timer is due.
  ///
  /// It is, when no submission or cancellation came after that one; or when the round's
  /// `maxWait` has passed (the racing events then belong to the round, and their burst is
  /// cancelled). Otherwise the round goes on in the racing events' burst, within its deadline.
  mutating func fired(_ sequence: UInt64, at reading: Duration) -> Bool {
    let now = observe(reading)
    guard sequence != self.sequence else { return true }
    guard let deadline else { return false }
    guard now < deadline else {
      cancel()
      return true
    }
    carriedDeadline = deadline
    arm(after: lastDelay, at: now)
    return false
  }

  /// The round ended: the next submission opens a new one.
  mutating func endRound() {
    deadline = nil
    carriedDeadline = nil
  }

  /// Takes the actions decided so far, for the caller to perform after the lock; `nil` when
  /// there are none, or when another thread is performing (it performs these too).
  mutating func claim() -> [Action]? {
    guard !isPerforming, !actions.isEmpty else { return nil }
    isPerforming = true
    return takeActions()
  }

  /// The performing thread is done: the actions decided meanwhile, for it to perform next, or
  /// `nil`, and it stops performing.
  mutating func next() -> [Action]? {
    isPerforming = !actions.isEmpty
    return isPerforming ? takeActions() : nil
  }

  private mutating func takeActions() -> [Action] {
    defer { actions = [] }
    return actions
  }
}
