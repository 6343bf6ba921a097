/// Where a ``BurstDriver`` keeps its lines and their timers: one line
/// (``SingleLine``: a queue, an actor, a stream iterator) or a line per key (``KeyedLines``).
///
/// The driver arms one timer for the whole instance, at the earliest deadline the lines have
/// scheduled; when it fires, the lines hand out their due timers in deadline order. A line's
/// timer that its machine no longer names (replaced, or its burst ended) may still be handed
/// out; the machine treats it as stale.
@usableFromInline
protocol BurstLines<Work>: Sendable {
  associatedtype LineID: Hashable & Sendable
  associatedtype Work: Sendable

  /// Whether a line is dropped once idle (keyed: an idle key holds no memory) or kept for good
  /// (one line, which keeps its task for `delay(task: nil)`).
  static var dropsIdleLines: Bool { get }

  init()

  /// How many lines hold state.
  var count: Int { get }
  /// The position of `id`'s line, or `nil` when it holds no state.
  func position(of id: LineID) -> Int?
  subscript(at position: Int) -> BurstLine<Work> { get set }
  /// Stores a new line for `id`; returns its position.
  mutating func insert(_ line: BurstLine<Work>, for id: LineID) -> Int
  /// Drops `id`'s idle line (only with ``dropsIdleLines``); its timer, if any, becomes stale.
  mutating func remove(_ id: LineID)
  /// The lines with a pending burst.
  func pendingIDs() -> [LineID]
  /// Makes every line forget the task given last (the owner is going away).
  mutating func forgetAllWork()

  /// Schedules `timer` for `id`'s line, the one its machine names (it replaces the line's
  /// earlier one).
  mutating func schedule(_ timer: TimerRequest, for id: LineID)
  /// Schedules a timer of `id`'s line that no machine names: the gate of a run waiting for the
  /// spacing, or the check that drops a line kept for its spacing.
  mutating func scheduleGate(_ timer: TimerRequest, for id: LineID)
  /// A line's scheduled timer was replaced by an earlier one, and is stale now.
  mutating func timerReplaced()
  /// ``popDue(by:)`` handed out a timer that its line did not name any more.
  mutating func staleTimerHandedOut()
  /// Hands out the scheduled timer with the earliest deadline, if it is due by `now`.
  mutating func popDue(by now: TimelineInstant) -> (id: LineID, generation: UInt64)?
  /// The earliest scheduled deadline, due or not.
  var earliestDeadline: TimelineInstant? { get }
  /// Scheduled timers, stale ones included; for tests.
  var scheduledCount: Int { get }
}
