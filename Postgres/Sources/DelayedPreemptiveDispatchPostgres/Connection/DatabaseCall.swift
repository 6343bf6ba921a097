import Logging
import NIOCore
import PostgresNIO

/// Where the queue's database is, for the errors that name it.
struct Endpoint: Sendable, Hashable {
  var host: String
  var port: Int
}

extension PostgresDelayedPreemptiveQueue {
  /// Runs one database call on a connection of the pool, bounded by `connectionTimeout` in fact:
  /// it returns or throws within that time whatever the driver does with cancellation, and
  /// every error it throws is a ``PostgresDelayedPreemptiveQueueError``.
  ///
  /// The call is *sent* when `body` gets its connection. Before that, giving up (the timeout,
  /// the caller's cancellation, a connection failure with a reason) withdraws it, so nothing is
  /// written: ``PostgresDelayedPreemptiveQueueError/databaseUnreachable(host:port:reason:)``.
  /// After that, silence or a broken connection is
  /// ``PostgresDelayedPreemptiveQueueError/outcomeUnknown(key:host:port:reason:)``, and the
  /// caller's cancellation no longer ends the call early. With `cancellable` false, the caller's
  /// cancellation does not end the call at all (a `delay` is written whatever becomes of its
  /// caller, as when it joins a batch).
  ///
  /// With `spare` (the worker's claim loop), a call that got no connection from the pool within
  /// `after` also asks the spare connection for one, and is sent on whichever comes first; the
  /// other one is withdrawn. So the claim loop does not wait for the pool's own reconnect
  /// backoff once the server accepts connections again.
  func database<Result: Sendable>(
    _ operation: String, key: String? = nil, timeout: Duration? = nil, cancellable: Bool = true,
    spare: (connection: SpareConnection, after: Duration)? = nil,
    _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
  ) async throws -> Result {
    let call = BoundedCall<Result>()
    let silence = SilentConnection()
    let failure = CallFailure(operation: operation, key: key, endpoint: endpoint)
    let limit = min(connectionTimeout, timeout ?? connectionTimeout)
    let client = client
    let probe = probe
    let faults = faults
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        call.install(continuation)
        /// Sends the call on `connection`, unless it was given up or sent on another one.
        let send:
          @Sendable (PostgresConnection, BoundedCall<Result>.Sender) async throws -> Result = {
            connection, sender in
            // postgres-nio 1.33.2 can lend a connection the server has just closed (the pool
            // has not seen the close yet), and a query written to it is never answered: the call
            // then fails unsent, and is not held until its timeout.
            guard !connection.isClosed else { throw PostgresError.connectionClosed }
            guard call.startSending(on: sender) else { throw CancellationError() }
            silence.sent(on: connection)
            let result: Result
            do {
              result = try await body(connection)
            } catch {
              await silence.answered(on: connection)
              // A connection to a read-only node is closed rather than given back, so that the
              // pool's next connection goes where the service's name, address or proxy points
              // now (the new primary after a failover), not to the same node again.
              if Self.isReadOnlyRefusal(error) { try? await connection.close() }
              throw error
            }
            if let delay = faults?.answerDelay(of: operation) {
              try? await Task.sleep(for: delay)
              faults?.answeredLate(operation)
            }
            await silence.answered(on: connection)
            if let faults, faults.takesAnswer(of: operation) {
              try? await connection.close()
              throw LostAnswer(operation: operation)
            }
            return result
          }
        let work = Task {
          do {
            let result = try await client.withConnection { try await send($0, .pool) }
            call.end(.success(result), from: .pool)
          } catch {
            call.end(.failure(failure.wrapping(error, sent: call.wasSent)), from: .pool)
          }
        }
        call.onWithdraw(.pool) { work.cancel() }
        // The bound: the queue's one timer (`CallTimers`), which costs no task, no hop and no
        // wake-up of its event loop unless it fires (a call that ends in time removes its
        // deadlines), so that a call adds no task of its own beside the one that waits for
        // the driver. The spare's start after its delay is such a deadline too: a claim that
        // the pool answers in time starts no task and no sleep for it.
        let timers = callTimers
        let start = NIODeadline.now()
        let spareTimer = spare.flatMap { spare -> CallTimers.Token? in
          let startSpare: @Sendable () -> Void = {
            let spareWork = Task {
              do {
                let connection = try await spare.connection.connection()
                let result = try await send(connection, .spare)
                call.end(.success(result), from: .spare)
              } catch {
                call.end(.failure(failure.wrapping(error, sent: call.wasSent)), from: .spare)
              }
            }
            call.onWithdraw(.spare) { spareWork.cancel() }
          }
          guard spare.after > .zero else {
            startSpare()
            return nil
          }
          return timers.add(at: start + TimeAmount(spare.after)) {
            guard call.isWaiting else { return }
            startSpare()
          }
        }
        let reason = "no answer within \(connectionTimeout)"
        let timeout = timers.add(at: start + TimeAmount(limit)) {
          call.giveUp(unsent: failure.unreachable(reason), sent: failure.unknown(reason))
          // A connection that carried no answer within the bound is closed, not given back: a
          // partition (no FIN, no RST) would otherwise keep it, and the task that waits on it,
          // leased for as long as the kernel retransmits (15 minutes with Linux's defaults), and
          // the next call given it would wait as long. This is the package's keepalive.
          silence.close()
        }
        // After `probeDelay` without a connection, the probe asks the server why there is none.
        let probing = Locked<Task<Void, Never>?>(nil)
        let probeTimer = probe.flatMap { probe in
          limit > Self.probeDelay
            ? timers.add(at: start + TimeAmount(Self.probeDelay)) {
              guard call.isWaiting else { return }
              let asking = Task {
                let left = limit - .nanoseconds((NIODeadline.now() - start).nanoseconds)
                if call.isWaiting, let found = await probe.failure(within: left) {
                  call.giveUp(unsent: failure.unreachable(found.reason), sent: nil)
                }
              }
              probing.withLock { $0 = asking }
            } : nil
        }
        call.onEnd {
          timers.remove(timeout)
          if let probeTimer { timers.remove(probeTimer) }
          if let spareTimer { timers.remove(spareTimer) }
          probing.withLock { $0 }?.cancel()
        }
      }
    } onCancel: {
      if cancellable { call.giveUp(unsent: CancellationError(), sent: nil) }
    }
  }

  /// Runs one call on the queue's held connection (see ``HeldConnection``), which
  /// ``HeldConnection/take(from:)`` gave: from the caller's task, with no task of its own and no lease, bounded by
  /// `connectionTimeout` as ``database(_:key:timeout:cancellable:spare:_:)`` is. `body` starts
  /// the statement and returns the future that its answer completes on the connection's event
  /// loop, which resumes the caller; the caller's cancellation does not end the call (it is sent
  /// at once).
  ///
  /// At the bound the call throws
  /// ``PostgresDelayedPreemptiveQueueError/outcomeUnknown(key:host:port:reason:)`` and closes
  /// the connection, so that the driver's work on it ends too and no later call waits behind
  /// it; the connection goes back to the pool, broken, as after any failure but a server's
  /// answer.
  func database<Result: Sendable>(
    _ operation: String, key: String? = nil, timeout: Duration? = nil,
    on connection: PostgresConnection,
    _ body: @Sendable (PostgresConnection) -> EventLoopFuture<Result>
  ) async throws -> Result {
    let call = BoundedCall<Result>()
    let failure = CallFailure(operation: operation, key: key, endpoint: endpoint)
    let limit = min(connectionTimeout, timeout ?? connectionTimeout)
    let reason = "no answer within \(connectionTimeout)"
    let faults = faults
    let timers = callTimers
    do {
      let result = try await withCheckedThrowingContinuation { continuation in
        call.install(continuation)
        _ = call.startSending(on: .pool)
        let timeout = timers.add(at: .now() + TimeAmount(limit)) {
          call.giveUp(unsent: failure.unreachable(reason), sent: failure.unknown(reason))
          _ = connection.close() as EventLoopFuture<Void>
        }
        call.onEnd { timers.remove(timeout) }
        body(connection).whenComplete { outcome in
          switch outcome {
          case .success(let result):
            if let faults, faults.takesAnswer(of: operation) {
              _ = connection.close() as EventLoopFuture<Void>
              let lost = LostAnswer(operation: operation)
              call.end(.failure(failure.wrapping(lost, sent: true)), from: .pool)
            } else {
              call.end(.success(result), from: .pool)
            }
          case .failure(let error):
            call.end(.failure(failure.wrapping(error, sent: true)), from: .pool)
          }
        }
      }
      heldConnection.giveBack(connection, broken: false)
      return result
    } catch {
      heldConnection.giveBack(connection, broken: !Self.isAnswer(error))
      throw error
    }
  }

  /// Whether `error` is a read-only node's refusal (SQLSTATE 25006), in either of postgres-nio's
  /// error types.
  static func isReadOnlyRefusal(_ error: any Error) -> Bool {
    switch error {
    case let error as PSQLError:
      // `.server`, or `.listenFailed` for a LISTEN the server refused ("cannot execute LISTEN
      // during recovery"), which keeps the server's fields.
      error.serverInfo?[.sqlState] == SQLState.readOnlyTransaction
    case PostgresError.server(let error):
      error.fields[.sqlState] == SQLState.readOnlyTransaction
    default: false
    }
  }

  /// Whether `error` is the server's answer to a statement, after which its connection is
  /// still in use.
  private static func isAnswer(_ error: any Error) -> Bool {
    switch error as? PostgresDelayedPreemptiveQueueError {
    case .databaseError?, .newerSchema?: true
    default: false
    }
  }

  /// What went wrong on a connection the queue holds outside ``database(_:key:timeout:_:)`` (the
  /// worker's LISTEN), as the package's typed error: the server's message and SQLSTATE where it
  /// gave them, never the driver's generic description.
  func failure(of operation: String, _ error: any Error) -> any Error {
    CallFailure(operation: operation, key: nil, endpoint: endpoint).wrapping(error, sent: false)
  }

  /// The error of a call that was given up before it was sent.
  func notSent(_ reason: String) -> PostgresDelayedPreemptiveQueueError {
    .databaseUnreachable(host: endpoint.host, port: endpoint.port, reason: reason)
  }

  /// How long a call waits for a connection before the probe asks the server why it has none.
  static var probeDelay: Duration { .milliseconds(500) }
}

/// Sleeps; returns false when cancelled.
func sleep(for duration: Duration) async -> Bool {
  do {
    try await Task.sleep(for: duration)
    return true
  } catch {
    return false
  }
}

/// The connection one bounded call of the pool (or the spare) was sent on, for as long as its
/// answer has not come: the call's bound closes it then (``close()``), and the call gives it
/// back only once that close is done, so that a connection being closed is never lent to
/// another call.
final class SilentConnection: Sendable {
  private enum State {
    case waiting
    case sent(PostgresConnection)
    case closing
    case answered
  }
  private let state = Locked(State.waiting)

  /// The call was sent on `connection`.
  func sent(on connection: PostgresConnection) {
    state.withLock { state in
      if case .waiting = state { state = .sent(connection) }
    }
  }

  /// The call's answer (or error) came on `connection`: once this returns, the call may give
  /// the connection back. If the bound is closing it, that close ends first.
  func answered(on connection: PostgresConnection) async {
    let closing = state.withLock { state -> Bool in
      defer { state = .answered }
      if case .closing = state { return true }
      return false
    }
    if closing { try? await connection.closeFuture.get() }
  }

  /// The bound passed: closes the connection if the call was sent on it and is still waiting
  /// for its answer.
  func close() {
    let connection = state.withLock { state -> PostgresConnection? in
      guard case .sent(let connection) = state else { return nil }
      state = .closing
      return connection
    }
    // Outside the lock: closing can fail the statement at once, on this thread, and its
    // callbacks take the call's own lock.
    if let connection { _ = connection.close() as EventLoopFuture<Void> }
  }
}

/// The state of one bounded call: it ends exactly once, with the first of its answer, a
/// timeout, a probe's reason or the caller's cancellation. It is sent on one connection at most:
/// the pool's, or the worker's spare one, whichever comes first; the other is withdrawn.
final class BoundedCall<Result: Sendable>: Sendable {
  /// Where a call may be sent.
  enum Sender: Sendable { case pool, spare }
  private enum Phase { case waiting, sending, ended }
  private struct State {
    var phase = Phase.waiting
    var sender: Sender?
    var continuation: CheckedContinuation<Result, any Error>?
    var withdraw: [Sender: @Sendable () -> Void] = [:]
    var stopTimer: (@Sendable () -> Void)?
  }
  private let state = Locked(State())

  var isWaiting: Bool { state.withLock { $0.phase == .waiting } }
  var wasSent: Bool { state.withLock { $0.sender != nil } }

  func install(_ continuation: CheckedContinuation<Result, any Error>) {
    state.withLock { $0.continuation = continuation }
  }

  /// Called with a connection, before anything is sent on it: false once the call was given up
  /// or sent on another connection. The other connection's request is withdrawn.
  func startSending(on sender: Sender) -> Bool {
    let other = state.withLock { state -> [@Sendable () -> Void]? in
      guard state.phase == .waiting else { return nil }
      state.phase = .sending
      state.sender = sender
      defer { state.withdraw = [:] }
      return state.withdraw.filter { $0.key != sender }.map { $0.value }
    }
    guard let other else { return false }
    for withdraw in other { withdraw() }
    return true
  }

  /// `withdraw` cancels the request of `sender` (the work waiting for its connection).
  func onWithdraw(_ sender: Sender, _ withdraw: @escaping @Sendable () -> Void) {
    let now = state.withLock { state -> Bool in
      guard state.phase == .waiting else { return state.sender != sender }
      state.withdraw[sender] = withdraw
      return false
    }
    if now { withdraw() }
  }

  func onEnd(_ stopTimer: @escaping @Sendable () -> Void) {
    let now = state.withLock { state -> Bool in
      guard state.phase != .ended else { return true }
      state.stopTimer = stopTimer
      return false
    }
    if now { stopTimer() }
  }

  /// Ends the call with what `sender` got; ignored when the call was sent on the other one.
  func end(_ outcome: Swift.Result<Result, any Error>, from sender: Sender) {
    finish { sent in
      guard sent == nil || sent == sender else { return nil }
      return outcome
    }
  }

  /// Ends the call with `unsent` if nothing was sent yet, else with `sent` (nil: keep waiting).
  func giveUp(unsent: any Error, sent: (any Error)?) {
    finish { sender in
      if sender == nil { return .failure(unsent) }
      return sent.map { .failure($0) }
    }
  }

  private func finish(_ outcome: (Sender?) -> Swift.Result<Result, any Error>?) {
    let ended = state.withLock {
      state -> (
        CheckedContinuation<Result, any Error>, Swift.Result<Result, any Error>,
        [@Sendable () -> Void], (@Sendable () -> Void)?
      )? in
      guard state.phase != .ended, let continuation = state.continuation,
        let result = outcome(state.sender)
      else { return nil }
      state.phase = .ended
      state.continuation = nil
      defer {
        state.withdraw = [:]
        state.stopTimer = nil
      }
      return (continuation, result, Array(state.withdraw.values), state.stopTimer)
    }
    guard let (continuation, result, withdraw, stopTimer) = ended else { return }
    for withdraw in withdraw { withdraw() }
    stopTimer?()
    continuation.resume(with: result)
  }
}

/// Turns what went wrong in one call into the package's typed error.
struct CallFailure: Sendable {
  /// A driver error without a server message, by its codes: an underlying `PSQLError` (a
  /// connection the worker closed, for example) is described by its own code in turn, never by
  /// postgres-nio's generic description.
  static func reason(of error: PSQLError) -> String {
    switch error.underlying {
    case let inner as PSQLError: "\(error.code): \(reason(of: inner))"
    case let underlying?: "\(error.code): \(underlying)"
    case nil: "\(error.code)"
    }
  }

  var operation: String
  var key: String?
  var endpoint: Endpoint

  func unreachable(_ reason: String) -> PostgresDelayedPreemptiveQueueError {
    .databaseUnreachable(host: endpoint.host, port: endpoint.port, reason: reason)
  }

  func unknown(_ reason: String) -> PostgresDelayedPreemptiveQueueError {
    .outcomeUnknown(key: key, host: endpoint.host, port: endpoint.port, reason: reason)
  }

  /// The server's refusal of a statement, with its SQLSTATE and message.
  private func server(sqlState: String, message: String, sent: Bool) -> any Error {
    // The server ends sessions when it shuts down or cannot take them: not the call's fault.
    // Once the call was sent, the server may have committed it before it ended the session
    // (a restart's 57P01 arrives after the statement ran), so its outcome is unknown.
    // A read-only node refused the statement, which rolled it back: nothing was written.
    if sqlState == SQLState.readOnlyTransaction {
      return unreachable(
        "the node is read-only, a standby or a former primary: \(message) (SQLSTATE \(sqlState))")
    }
    if PostgresDelayedPreemptiveQueueError.Kind(sqlState: sqlState) == .outage {
      let reason = "\(message) (SQLSTATE \(sqlState))"
      return sent ? unknown(reason) : unreachable(reason)
    }
    if sqlState == Schema.newerSchemaState {
      return PostgresDelayedPreemptiveQueueError.newerSchema(
        found: Int(message) ?? -1, supported: Schema.version)
    }
    return PostgresDelayedPreemptiveQueueError.databaseError(
      operation: operation, sqlState: sqlState, reason: message)
  }

  /// `sent`: whether the call had reached its connection when `error` happened.
  func wrapping(_ error: any Error, sent: Bool) -> any Error {
    switch error {
    case let error as PostgresDelayedPreemptiveQueueError: return error
    case is CancellationError: return error
    // A refusal by the server: `.server`, or `.listenFailed` for a refused LISTEN, which
    // postgres-nio 1.33.2 reports with the server's fields too (a standby's "cannot execute
    // LISTEN during recovery", SQLSTATE 25006), so that its SQLSTATE is kept.
    case let error as PSQLError where error.serverInfo?[.sqlState] != nil:
      return server(
        sqlState: error.serverInfo?[.sqlState] ?? "?????",
        message: error.serverInfo?[.message] ?? "\(error.code)", sent: sent)
    // postgres-nio's future-based prepared statements (the held connection's, see
    // `HeldConnection`) report the server's errors in its older type.
    case PostgresError.server(let error):
      return server(
        sqlState: error.fields[.sqlState] ?? "?????",
        message: error.fields[.message] ?? "the server refused the statement", sent: sent)
    case PostgresError.connectionClosed:
      let reason = "the connection broke: connection closed"
      return sent ? unknown(reason) : unreachable(reason)
    case let error as PSQLError:
      let reason = Self.reason(of: error)
      return sent ? unknown("the connection broke: \(reason)") : unreachable(reason)
    default:
      // The pool's own errors (its type is not public) and anything else from the driver.
      return sent
        ? unknown(String(describing: error)) : unreachable(String(describing: error))
    }
  }
}

extension PostgresConnection {
  /// Executes a prepared statement and collects its rows.
  func rows<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger)
    async throws -> [Statement.Row]
  {
    var rows: [Statement.Row] = []
    for try await row in try await execute(statement, logger: logger) { rows.append(row) }
    return rows
  }

  /// Runs a query and decodes the first column of its first row.
  func scalar<Column: PostgresDecodable>(
    _ query: PostgresQuery, as type: Column.Type, logger: Logger
  ) async throws -> Column? {
    var first: Column?
    for try await row in try await self.query(query, logger: logger) where first == nil {
      first = try row.decode(Column.self)
    }
    return first
  }
}
