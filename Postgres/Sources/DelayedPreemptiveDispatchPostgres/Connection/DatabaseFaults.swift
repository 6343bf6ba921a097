import PostgresNIO

/// A test seam in ``PostgresDelayedPreemptiveQueue/database(_:key:timeout:_:)``: makes a call
/// whose statement the server has run (and, outside a transaction, committed) end as if its
/// connection broke before the answer came, so that the tests can make "applied but not
/// confirmed" happen on purpose for each statement. Nothing sets it outside the tests.
final class DatabaseFaults: Sendable {
  private let pending = Locked<[String: Int]>([:])
  private let injected = Locked<[String: Int]>([:])
  private let delays = Locked<[String: [Duration]]>([:])

  /// The next call of `operation` is applied, and its answer then comes `delay` late, as when a
  /// partition holds it up and then delivers it.
  func delayAnswer(of operation: String, by delay: Duration) {
    delays.withLock { $0[operation, default: []].append(delay) }
  }

  private let deliveredLate = Locked<[String: Int]>([:])

  /// How many answers of `operation` came late so far (see ``delayAnswer(of:by:)``).
  func lateAnswers(of operation: String) -> Int {
    deliveredLate.withLock { $0[operation] ?? 0 }
  }

  /// A late answer of `operation` was given to its call.
  func answeredLate(_ operation: String) {
    deliveredLate.withLock { $0[operation, default: 0] += 1 }
  }

  /// How late the answer of the call of `operation` that just ran must come; nil: on time.
  func answerDelay(of operation: String) -> Duration? {
    delays.withLock { delays in
      guard var left = delays[operation], !left.isEmpty else { return nil }
      let delay = left.removeFirst()
      delays[operation] = left
      return delay
    }
  }

  /// The next `times` calls of `operation` (the label a call passes to `database`) are applied
  /// and then lose their answer.
  func loseAnswer(of operation: String, times: Int = 1) {
    pending.withLock { $0[operation, default: 0] += times }
  }

  /// How many answers of `operation` were lost so far.
  func lostAnswers(of operation: String) -> Int {
    injected.withLock { $0[operation] ?? 0 }
  }

  /// Whether the call of `operation` that just ran must lose its answer; counts it if so.
  func takesAnswer(of operation: String) -> Bool {
    let take = pending.withLock { pending -> Bool in
      guard let left = pending[operation], left > 0 else { return false }
      pending[operation] = left - 1
      return true
    }
    if take { injected.withLock { $0[operation, default: 0] += 1 } }
    return take
  }
}

/// What a call that lost its answer to ``DatabaseFaults`` throws: to the call, a connection that
/// broke after the statement was sent.
struct LostAnswer: Error, CustomStringConvertible {
  var operation: String
  var description: String { "the connection broke before the answer to \(operation) (test fault)" }
}
