import NIOCore
import PostgresNIO

/// How a run's job waits for its handler: until the handler ends, or, once the job has given
/// the run up (it ran past `runTimeout`, or its lease was lost) and cancelled the handler, for
/// at most a grace period more. A handler that has not ended by then is abandoned: the job
/// stops waiting for it, so that its slot, the worker's shutdown and the burst's next run never
/// wait for a handler that does not return. A handler can fail to return through no fault of
/// its own: postgres-nio 1.33.2 leaves a query unanswered for ever when it is sent on a
/// connection the server has just closed (a restart or a stop), which the pool can still lend.
///
/// It costs a run one lock box and one continuation: the deadlines go to the queue's one timer
/// (``CallTimers``), and nothing is scheduled unless the run is given up.
final class RunWatch: Sendable {
  /// Why the job gave the run up.
  enum Reason: Sendable, Equatable {
    /// The handler ran past `runTimeout`.
    case timedOut
    /// The run's lease was lost.
    case leaseLost
  }

  /// What the job's wait ended with.
  enum Outcome: Sendable {
    /// The handler ended, with this result.
    case ended(Result<RunEnd, any Error>)
    /// The handler did not end within the grace after its cancellation.
    case abandoned
  }

  private struct State {
    var continuation: CheckedContinuation<Outcome, Never>?
    var outcome: Outcome?
    var reason: Reason?
    /// What gives the run's transaction up: it closes its connection (transactional runs).
    var closeTransaction: (@Sendable () -> Void)?
  }

  private let state = Locked(State())

  /// Why the run was given up; nil while it was not.
  var reason: Reason? { state.withLock { $0.reason } }

  /// The handler's end. Only the first of it and an abandonment counts.
  func ended(_ result: Result<RunEnd, any Error>) {
    resume(.ended(result))
  }

  /// Gives the run up for `reason` (the first reason counts): cancels the handler with `cancel`,
  /// closes its transaction's connection, if it has one, and abandons it unless it ends within
  /// `grace`.
  func giveUp(
    _ reason: Reason, grace: Duration, timers: CallTimers, cancel: @Sendable () -> Void
  ) {
    let close = state.withLock { state -> (@Sendable () -> Void)?? in
      guard state.reason == nil, state.outcome == nil else { return nil }
      state.reason = reason
      return .some(state.closeTransaction)
    }
    guard let close else { return }
    cancel()
    close?()
    _ = timers.add(at: .now() + TimeAmount(grace)) { [weak self] in self?.resume(.abandoned) }
  }

  /// Says how to end the run's transaction when it is given up: by closing `connection`, which
  /// rolls the transaction back, so that none of a given-up run's writes land. Closes it at
  /// once when the run was given up already.
  func holdsTransaction(on connection: PostgresConnection) {
    let close: @Sendable () -> Void = { _ = connection.close() as EventLoopFuture<Void> }
    let givenUp = state.withLock { state -> Bool in
      state.closeTransaction = close
      return state.reason != nil
    }
    if givenUp { close() }
  }

  /// Waits until the handler ends or is abandoned.
  func wait() async -> Outcome {
    await withCheckedContinuation { continuation in
      let outcome = state.withLock { state -> Outcome? in
        if let outcome = state.outcome { return outcome }
        state.continuation = continuation
        return nil
      }
      if let outcome { continuation.resume(returning: outcome) }
    }
  }

  private func resume(_ outcome: Outcome) {
    let continuation = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
      guard state.outcome == nil else { return nil }
      state.outcome = outcome
      defer { state.continuation = nil }
      return state.continuation
    }
    continuation?.resume(returning: outcome)
  }
}

/// A run that the worker gave up, as the error its end records (`last_error`) and its log line
/// say.
struct RunGivenUp: Error, CustomStringConvertible {
  var reason: RunWatch.Reason
  var limit: Duration?
  /// The handler did not end within the grace after its cancellation.
  var abandoned: Bool

  var description: String {
    var text =
      switch reason {
      case .timedOut:
        "the handler did not return within runTimeout (\(limit.map { "\($0)" } ?? "none")); "
          + "it was cancelled"
      case .leaseLost: "the run's lease was lost; its handler was cancelled"
      }
    if abandoned { text += ", and was abandoned when it had not ended in time after that" }
    return text
  }
}
