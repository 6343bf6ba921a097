import Foundation

/// What a queue holds at one moment, as ``PostgresDelayedPreemptiveQueue/snapshot(of:limit:)``
/// reads it for an operator: the bursts that wait, with when they are due; the bursts that run,
/// with their lease; and the kept failures. Each list holds at most the call's `limit` entries,
/// and its count says how many there are in all.
///
/// ```swift
/// let snapshot = try await queue.snapshot(of: .prefix("doc-"), limit: 20)
/// for burst in snapshot.waiting where burst.dueIn < .seconds(-60) {
///   logger.warning("a burst has been due for over a minute; is a worker running?")
/// }
/// ```
public struct PostgresQueueSnapshot: Sendable, Hashable {
  /// Which keys a snapshot shows.
  public enum Keys: Sendable, Hashable {
    /// Every key.
    case all
    /// The keys that begin with this text (compared as text, case-sensitively; `""` is every
    /// key).
    case prefix(String)
    /// This key only.
    case key(String)
  }

  /// Whether the queue's name is known to the database: a `migrate()` of a queue of this name
  /// has run there (it stored the queue's options). False for a name that no service uses, such
  /// as a mistyped one, which then has no bursts and no failures either.
  public var isKnown: Bool
  /// The bursts that wait, earliest due first (then by key), at most `limit`.
  public var waiting: [PostgresWaitingBurst]
  /// How many bursts of the chosen keys wait, in all.
  public var waitingCount: Int
  /// The bursts that a worker holds, by key, at most `limit`.
  public var running: [PostgresRunningBurst]
  /// How many bursts of the chosen keys run, in all.
  public var runningCount: Int
  /// The kept failures, oldest first, at most `limit`.
  public var failures: [PostgresRawBurstFailure]
  /// How many kept failures the chosen keys have, in all.
  public var failureCount: Int

  /// Creates a snapshot (the queue makes these; tests may too).
  public init(
    isKnown: Bool, waiting: [PostgresWaitingBurst], waitingCount: Int,
    running: [PostgresRunningBurst], runningCount: Int, failures: [PostgresRawBurstFailure],
    failureCount: Int
  ) {
    self.isKnown = isKnown
    self.waiting = waiting
    self.waitingCount = waitingCount
    self.running = running
    self.runningCount = runningCount
    self.failures = failures
    self.failureCount = failureCount
  }

  /// Whether the chosen keys have nothing: no burst waits or runs, and no failure is kept.
  public var isEmpty: Bool { waitingCount == 0 && runningCount == 0 && failureCount == 0 }
}

/// A burst that waits for its run, as ``PostgresQueueSnapshot/waiting`` lists it.
public struct PostgresWaitingBurst: Sendable, Hashable {
  /// The burst's key.
  public var key: String
  /// When it becomes due, on the database's clock: its deadline, its next try after a run that
  /// threw (`retryBackoff`), or the end of its key's `minimumSpacing`, whichever applies.
  public var due: Date
  /// How long until it is due, on the database's clock; negative once it is due and no worker
  /// has claimed it yet (the workers are busy, stopped, or cannot reach the database).
  public var dueIn: Duration
  /// How many submissions it holds.
  public var submissions: Int
  /// How many runs it had: 0 before its first, else the runs that threw (it waits to be tried
  /// again, as run `attempts + 1`).
  public var attempts: Int
  /// The fence of its last claim, or nil before its first.
  public var fence: Int64?

  /// Creates a record of a waiting burst (the queue makes these; tests may too).
  public init(
    key: String, due: Date, dueIn: Duration, submissions: Int, attempts: Int, fence: Int64?
  ) {
    self.key = key
    self.due = due
    self.dueIn = dueIn
    self.submissions = submissions
    self.attempts = attempts
    self.fence = fence
  }
}
