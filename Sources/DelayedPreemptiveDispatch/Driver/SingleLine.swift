/// The lines of a queue, an actor or a stream iterator: one line, always there (the shell
/// installs it with its task, ``BurstDriver/installLine(_:work:)``), and at most one scheduled
/// timer (a line schedules a new one only when its deadline moved earlier, which
/// makes the old one stale, or after the old one fired).
@usableFromInline
struct SingleLine<Work: Sendable>: BurstLines {
  /// The one line's name.
  @usableFromInline
  struct LineID: Hashable, Sendable {
    @inlinable init() {}
  }

  @usableFromInline var line = BurstLine<Work>(work: nil, tracking: .none, keepsAll: false)
  @usableFromInline var timer: TimerRequest?
  /// The gates of runs waiting for the spacing, earliest first (each opens later than the one
  /// before: a gated run starts the spacing of the next).
  @usableFromInline var gates: [TimerRequest] = []

  @inlinable static var dropsIdleLines: Bool { false }

  @inlinable init() {}

  @inlinable var count: Int { 1 }

  @inlinable
  func position(of id: LineID) -> Int? {
    0
  }

  @inlinable
  subscript(at position: Int) -> BurstLine<Work> {
    get { line }
    _modify { yield &line }
  }

  @inlinable
  mutating func insert(_ line: BurstLine<Work>, for id: LineID) -> Int {
    self.line = line
    return 0
  }

  @inlinable
  mutating func remove(_ id: LineID) {
    preconditionFailure("Internal inconsistency: the one line of an instance is never dropped")
  }

  @inlinable
  func pendingIDs() -> [LineID] {
    line.isPending ? [LineID()] : []
  }

  @inlinable
  mutating func forgetAllWork() {
    line.forgetWork()
  }

  @inlinable
  mutating func staleTimerHandedOut() {}

  @inlinable
  mutating func schedule(_ timer: TimerRequest, for id: LineID) {
    self.timer = timer
  }

  @inlinable
  mutating func scheduleGate(_ timer: TimerRequest, for id: LineID) {
    let index = gates.firstIndex { $0.deadline > timer.deadline } ?? gates.endIndex
    gates.insert(timer, at: index)
  }

  @inlinable
  mutating func timerReplaced() {}

  @inlinable
  mutating func popDue(by now: TimelineInstant) -> (id: LineID, generation: UInt64)? {
    if let gate = gates.first, gate.deadline <= now,
      gate.deadline <= timer?.deadline ?? gate.deadline
    {
      gates.removeFirst()
      return (LineID(), gate.generation)
    }
    guard let timer, timer.deadline <= now else { return nil }
    self.timer = nil
    return (LineID(), timer.generation)
  }

  @inlinable var earliestDeadline: TimelineInstant? {
    switch (timer?.deadline, gates.first?.deadline) {
    case (let timer?, let gate?): min(timer, gate)
    case (let timer, let gate): timer ?? gate
    }
  }

  @inlinable var scheduledCount: Int { (timer == nil ? 0 : 1) + gates.count }
}
