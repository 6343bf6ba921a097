import PostgresNIO

/// What a worker runs for each claimed burst: a handler, or a handler given a connection with a
/// transaction open, in which the run's end is then written (rule P16).
enum RunHandler<Value: Codable & Sendable>: Sendable {
  case plain(@Sendable (PostgresBurstRun<Value>) async throws -> Void)
  case transactional(@Sendable (PostgresBurstRun<Value>, PostgresConnection) async throws -> Void)
}

/// How a run that did not throw ended.
enum RunEnd: Sendable, Equatable {
  /// The handler returned; its end is yet to be recorded.
  case returned
  /// The handler's transaction committed with the run's end in it.
  case committed
  /// The claim no longer held the key when the handler returned: its transaction was rolled
  /// back, so none of its writes landed.
  case stale
  /// The run's end was written in the handler's transaction, and the answer to its `COMMIT`
  /// was lost: both committed, or neither did (then the burst runs again after its lease).
  case commitUnconfirmed
}
