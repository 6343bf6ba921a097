import DelayedPreemptiveDispatch

/// What happened during a scenario, with the time since it started; filled from any thread.
final class Timeline: Sendable {
  struct Submission: Sendable {
    var id: Int
    var label: String
    var at: Duration
    var delay: Duration
    var outcome: DelayOutcome?
    var resolvedAt: Duration?
  }

  struct Event: Sendable {
    enum Kind: Sendable {
      /// Something the user or the system did.
      case input
      /// A submission, a preemption or a cancellation.
      case dispatch
      /// The delayed task ran.
      case fired
      /// The adapter fed with the same inputs called back; `mark` is its glyph on the row.
      case adapter(mark: Character)
    }

    var at: Duration
    var kind: Kind
    var text: String
  }

  private struct Record {
    var submissions: [Submission] = []
    var events: [Event] = []
  }

  private let start = ContinuousClock.now
  private let record = LockBox(Record())

  /// The time since the scenario started.
  var now: Duration { start.duration(to: .now) }

  func log(_ kind: Event.Kind, _ text: String) {
    let at = now
    record.withLock { $0.events.append(Event(at: at, kind: kind, text: text)) }
  }

  /// Records a new submission and returns its number, counting from 1.
  func submit(_ label: String, delay: Duration) -> Int {
    let at = now
    return record.withLock { record in
      let id = record.submissions.count + 1
      record.submissions.append(Submission(id: id, label: label, at: at, delay: delay))
      return id
    }
  }

  func resolve(_ id: Int, _ outcome: DelayOutcome) {
    let at = now
    record.withLock { record in
      record.submissions[id - 1].outcome = outcome
      record.submissions[id - 1].resolvedAt = at
    }
  }

  var submissions: [Submission] { record.withLock { $0.submissions } }
  var events: [Event] { record.withLock { $0.events.sorted { $0.at < $1.at } } }
}
