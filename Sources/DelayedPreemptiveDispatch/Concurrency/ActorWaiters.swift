/// The callers of an actor that wait for its runs: `flush` (a line's runs), a timer delivery
/// on a test clock (every run it made due) and `wait` (nothing pending or running). Checked
/// after every event, not only once idle.
@usableFromInline
struct ActorWaiters<LineID: Hashable & Sendable>: Sendable {
  @usableFromInline
  enum Condition: Sendable {
    /// No run of the line decided or running.
    case lineQuiet(LineID)
    /// No run decided or running, any line.
    case runsDrained
    /// Nothing pending or running.
    case idle
  }

  @usableFromInline var waiting: [(Condition, CheckedContinuation<Void, Never>)] = []

  @inlinable init() {}

  @inlinable var isEmpty: Bool { waiting.isEmpty }

  @inlinable
  static func holds<Lines>(_ condition: Condition, in driver: BurstDriver<Lines>) -> Bool
  where Lines.LineID == LineID {
    switch condition {
    case .lineQuiet(let id): return !driver.hasRuns(id)
    case .runsDrained: return driver.unfinishedRuns == 0
    case .idle: return driver.outstanding == 0
    }
  }

  @inlinable
  mutating func add(_ condition: Condition, _ continuation: CheckedContinuation<Void, Never>) {
    waiting.append((condition, continuation))
  }

  /// Takes out the waiters whose condition holds now, to resume.
  @inlinable
  mutating func takeSatisfied<Lines>(by driver: BurstDriver<Lines>) -> [CheckedContinuation<
    Void, Never
  >] where Lines.LineID == LineID {
    var satisfied: [CheckedContinuation<Void, Never>] = []
    var left: [(Condition, CheckedContinuation<Void, Never>)] = []
    for (condition, continuation) in waiting {
      if Self.holds(condition, in: driver) {
        satisfied.append(continuation)
      } else {
        left.append((condition, continuation))
      }
    }
    waiting = left
    return satisfied
  }
}
