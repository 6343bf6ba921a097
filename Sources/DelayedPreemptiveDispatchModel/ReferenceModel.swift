import DelayedPreemptiveDispatch

/// The obviously correct model of one key's bursts: one optional burst, whose deadline is a
/// formula, instead of timers, generations and re-arming. Every engine of the rules is checked
/// against it on random sequences (``KeyedModelSequence``): the in-process state machine and
/// keyed driver in this package's tests, and the PostgreSQL store in the Postgres package's.
///
/// Time is in whole milliseconds from 0. `advance(by:)` moves time as an engine whose timers
/// fire on time does; `hold(by:)` moves it with every timer late, so that a due burst waits
/// for the next event (T7).
public struct ReferenceModel: Sendable {
  /// A run as the model decides it: its work, and the instant it starts.
  public struct Run: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var work: String
    public var at: Int64

    public init(work: String, at: Int64) {
      self.work = work
      self.at = at
    }

    public var description: String { "\(work)@\(at)" }
  }

  /// How a submission's work joins its burst: the last one replaces the others (the in-process
  /// engines), or each is appended (the PostgreSQL store's `.append`, whose run gets the
  /// burst's values in order, joined here with "+").
  public enum Merge: Sendable, Equatable {
    case replace
    case append
  }

  /// Where `minimumSpacing` counts from when a run starts later than the instant it was
  /// decided for (a timer or a worker that is late, T7).
  public enum SpacingOrigin: Sendable, Equatable {
    /// From the instant the run was decided for: the in-process engines (T7: what runs and
    /// when depends only on the instants of the submissions).
    case decidedInstant
    /// From the instant the run starts: the PostgreSQL store, whose spacing counts from the
    /// handler's start, so that two starts are never closer than the spacing.
    case start
  }

  /// The pending burst.
  public struct Burst: Sendable {
    public var start: Int64
    public var quietDeadline: Int64
    public var leadingSeq: UInt64?
    public var lastSeq: UInt64
    public var submissions = 1
    /// The works appended so far (``Merge/append``); empty under ``Merge/replace``.
    public var appended: [String] = []
  }

  public let options: DelayOptions
  public let merge: Merge
  public let spacingOrigin: SpacingOrigin
  public var lastWork: String?
  public var burst: Burst?
  public var nextSeq: UInt64 = 0
  public var now: Int64 = 0
  public var runs: [Run] = []
  public var outcomes: [UInt64: DelayOutcome] = [:]
  /// `minimumSpacing`: the earliest instant the next run may start (T1).
  public var nextRunStart: Int64 = 0
  /// Runs decided but waiting for the spacing (T2), and the runs decided behind them, in
  /// order, with the instant each starts.
  public var waitingRuns: [(run: Run, seq: UInt64)] = []

  public init(
    options: DelayOptions, lastWork: String? = nil, merge: Merge = .replace,
    spacingOrigin: SpacingOrigin = .decidedInstant
  ) {
    precondition(
      !(merge == .append && options.leading), "merge: .append is modelled without leading")
    self.options = options
    self.spacingOrigin = spacingOrigin
    self.lastWork = lastWork
    self.merge = merge
  }

  /// Whether a burst is pending.
  public var isPending: Bool { burst != nil }

  /// `minimumSpacing` in milliseconds; nil for none.
  public var spacing: Int64? {
    guard let spacing = options.minimumSpacing, spacing > .zero else { return nil }
    return Self.milliseconds(spacing)
  }

  /// `maxWait` in milliseconds; nil for none. The model rounds toward zero, as its options are
  /// whole milliseconds.
  public var maxWait: Int64? { options.maxWait.map { max(Self.milliseconds($0), 0) } }

  static func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
  }

  /// The instant the burst is due: its quiet deadline, bounded by `maxWait` from its first
  /// submission, and no sooner than the spacing allows.
  public func deadline(of burst: Burst) -> Int64 {
    var deadline = burst.quietDeadline
    if let maxWait { deadline = min(deadline, burst.start + maxWait) }
    return max(deadline, nextRunStart)
  }

  /// The pending burst's due instant, or nil.
  public var dueInstant: Int64? { burst.map(deadline(of:)) }

  /// Runs `work` for submission `seq` at `instant`; its ticket resolves once it has run. An
  /// instant already past (a burst that a late timer or a submission ended at its due
  /// instant, T7) runs now, but the spacing counts from `instant` (``SpacingOrigin``).
  mutating func run(_ work: String, at instant: Int64, seq: UInt64) {
    if instant > now || !waitingRuns.isEmpty {
      let start = max(instant, waitingRuns.last?.run.at ?? instant)
      if let spacing { nextRunStart = (spacingOrigin == .start ? start : instant) + spacing }
      waitingRuns.append((.init(work: work, at: start), seq))
    } else {
      if let spacing { nextRunStart = (spacingOrigin == .start ? now : instant) + spacing }
      runs.append(.init(work: work, at: now))
      outcomes[seq] = .executed
    }
  }

  /// A burst due by now whose timer has not fired (after ``hold(by:)``) ends at its due
  /// instant, before anything else happens at now (T7).
  public mutating func endBurstDue() {
    guard let current = burst, deadline(of: current) <= now else { return }
    endBurst(running: true, at: deadline(of: current))
  }

  /// Time moves on, and no timer fires: they are late until the next ``advance(by:)``.
  public mutating func hold(by milliseconds: Int64) {
    now += max(milliseconds, 0)
  }

  /// A submission of `work` (nil: the last work again) due `milliseconds` from now.
  public mutating func delay(_ milliseconds: Int64, _ work: String?) {
    endBurstDue()
    if let work { lastWork = work }
    guard let lastWork else { return }
    let seq = nextSeq
    nextSeq += 1
    let requested = now + max(milliseconds, 0)
    guard var current = burst else {
      // `leading` runs at once only when the spacing allows a run now (T2).
      let leads = options.leading && nextRunStart <= now
      burst = Burst(
        start: now, quietDeadline: requested, leadingSeq: leads ? seq : nil, lastSeq: seq,
        appended: merge == .append ? [lastWork] : [])
      if leads { run(lastWork, at: now, seq: seq) }
      if options.maxSubmissions == 1 {
        complete()
      } else if deadline(of: burst!) <= now {  // due now: it ends at once (T5)
        endBurst(running: true, at: now)
      }
      return
    }
    if current.lastSeq != current.leadingSeq { outcomes[current.lastSeq] = .preempted }
    current.lastSeq = seq
    current.submissions += 1
    if merge == .append { current.appended.append(lastWork) }
    current.quietDeadline =
      options.deadlinePolicy == .extend ? max(current.quietDeadline, requested) : requested
    burst = current
    if let maxSubmissions = options.maxSubmissions, current.submissions >= maxSubmissions {
      complete()
    } else if deadline(of: current) <= now {
      endBurst(running: true, at: now)
    }
  }

  /// `maxSubmissions` reached: the burst ends now, and its run starts once the spacing allows.
  mutating func complete() {
    endBurst(running: true, at: max(now, nextRunStart))
  }

  /// `cancel`: the pending burst ends without running.
  public mutating func cancel() {
    endBurst(running: false, at: now)
  }

  /// `flush`: the pending burst runs now, whatever the spacing.
  public mutating func flush() {
    endBurst(running: true, at: now)
  }

  /// Ends the pending burst: its run is decided at `instant` (`running`), or it is cancelled.
  public mutating func endBurst(running: Bool, at instant: Int64) {
    guard let current = burst else { return }
    burst = nil
    guard current.lastSeq != current.leadingSeq else { return }
    if running {
      let work = merge == .append ? current.appended.joined(separator: "+") : lastWork!
      run(work, at: instant, seq: current.lastSeq)
    } else {
      outcomes[current.lastSeq] = .cancelled
    }
  }

  /// Moves time on, ending the burst at its due instant on the way; what a held time made
  /// late runs first, at the current time.
  public mutating func advance(by milliseconds: Int64) {
    let target = now + max(milliseconds, 0)
    while true {
      let due = burst.map(deadline(of:))
      if let first = waitingRuns.first, first.run.at <= min(target, due ?? target) {
        startFirstWaitingRun()
      } else if let due, due <= target {
        now = max(now, due)
        endBurst(running: true, at: due)
      } else {
        break
      }
    }
    now = target
  }

  /// Starts the first run that waits for the spacing, now if its instant has passed. Spacing
  /// from its start (``SpacingOrigin/start``), the next run waits for the spacing from this
  /// start, which a late start moves later.
  mutating func startFirstWaitingRun() {
    let first = waitingRuns.removeFirst()
    let start = max(first.run.at, now)
    runs.append(.init(work: first.run.work, at: start))
    outcomes[first.seq] = .executed
    guard spacingOrigin == .start, let spacing else { return }
    nextRunStart = max(nextRunStart, start + spacing)
    if !waitingRuns.isEmpty {
      waitingRuns[0].run.at = max(waitingRuns[0].run.at, start + spacing)
    }
  }
}
