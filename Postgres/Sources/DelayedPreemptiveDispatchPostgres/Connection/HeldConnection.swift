import Logging
import NIOCore
import PostgresNIO

/// One connection of the client's pool that a queue keeps for its `delay` statements while they
/// keep coming, so that a call neither leases a connection nor waits for another task: it takes
/// this one under a lock, sends its statement from the caller's task and is resumed by the
/// answer (see ``PostgresDelayedPreemptiveQueue/database(_:key:timeout:on:_:)``). Leasing from
/// postgres-nio's pool costs a `delay` from one producer about a fifth of its time on a 2-core
/// machine (BENCHMARKS.md); this is what a queue skips. The holder prepares `delay`'s statement
/// on the connection before it lends it (``Held/submit``), so that a call sends only its
/// bindings, as through the pool: an unnamed statement would make the server parse and plan the
/// call each time (about 30 % more server instructions for one row).
///
/// - A queue starts holding a connection at its second `delay` statement (a handle made for one
///   call never holds one), in a task of its own: the calls go through the pool meanwhile.
/// - It is one connection per queue and its copies, used by one statement at a time; a statement
///   that finds it in use goes through the pool.
/// - It goes back to the pool after `idleRelease` without a statement, when the queue is gone,
///   when it broke or closed (a restart, the client's shutdown), or when a call on it got no
///   answer in time (the call closes it: see ``PostgresDelayedPreemptiveQueue/connectionTimeout``).
/// - A queue holds none when its pool may have fewer than ``minimumPool`` connections, or when
///   it was made without the client's configuration (its pool's size is unknown), so that it
///   never takes a small pool's last connections from the work that needs them.
///
/// Its task holds the queue weakly: holding a connection never keeps the queue alive.
final class HeldConnection: Sendable {
  /// The smallest pool (`maximumConnections`) of which a queue holds a connection.
  static let minimumPool = 4
  /// How long a held connection stays unused before it goes back to the pool.
  static let defaultIdleRelease = Duration.seconds(10)

  /// A held connection, with `delay`'s statement prepared on it.
  struct Held: Sendable {
    var connection: PostgresConnection
    /// ``DelayStatement/committedSQL``, prepared on `connection`.
    var submit: PreparedQuery
  }

  private struct State {
    /// The connection while one is held; nil otherwise.
    var held: Held?
    var connection: PostgresConnection? { held?.connection }
    var inUse = false
    /// The task that leases and holds the connection, while it runs (its number, its handle
    /// once known); nil when none runs.
    var holder: (number: Int, task: Task<Void, Never>?)?
    var holders = 0
    var lastUse = ContinuousClock.now
    var statements = 0
    /// Statements sent on the held connection, for the tests.
    var sent = 0
  }

  private let state = Locked(State())
  private let enabled: Bool
  private let idleRelease: Duration
  /// Says why no connection could be held (the statements go through the pool meanwhile).
  private let failure: CallFailure
  private let logger: Logger

  init(
    enabled: Bool, idleRelease: Duration = HeldConnection.defaultIdleRelease,
    endpoint: Endpoint = Endpoint(host: "(host not given)", port: 0),
    logger: Logger = PostgresDelayedPreemptiveQueue<Int>.silentLogger
  ) {
    self.enabled = enabled
    self.idleRelease = idleRelease
    self.failure = CallFailure(
      operation: "hold a connection for delay", key: nil, endpoint: endpoint)
    self.logger = logger
  }

  deinit {
    state.withLock { $0.holder?.task }?.cancel()
  }

  /// How many statements were sent on a held connection.
  var statementsSent: Int { state.withLock { $0.sent } }
  /// Whether a connection is held now.
  var isHolding: Bool { state.withLock { $0.held != nil } }

  /// The held connection for one statement, or nil when none is held or it is in use (the
  /// statement goes through the pool). Starts holding one for the next statements when none is
  /// held and the queue has sent one before.
  func take(from client: PostgresClient) -> Held? {
    guard enabled else { return nil }
    let (taken, start) = state.withLock { state -> (Held?, Int?) in
      state.statements += 1
      state.lastUse = .now
      if let held = state.held {
        let connection = held.connection
        if state.inUse { return (nil, nil) }
        guard !connection.isClosed else {
          // Closed while unused (a restart, the client's shutdown): not taken again. Its holder
          // gives it back once the pool knows it closed (see `closed(number:)`).
          state.held = nil
          return (nil, nil)
        }
        state.inUse = true
        state.sent += 1
        return (held, nil)
      }
      guard state.holder == nil, state.statements >= 2 else { return (nil, nil) }
      state.holders += 1
      state.holder = (state.holders, nil)
      return (nil, state.holders)
    }
    if let start { startHolding(number: start, from: client) }
    return taken
  }

  /// Gives back the connection that ``take(from:)`` returned. A `broken` one (closed, or
  /// without an answer in time) is closed and never taken again; its holder gives it back to
  /// the pool once the pool knows it closed.
  func giveBack(_ connection: PostgresConnection, broken: Bool) {
    let close = state.withLock { state -> Bool in
      guard state.connection === connection else { return broken }
      state.inUse = false
      state.lastUse = .now
      guard broken || connection.isClosed else { return false }
      state.held = nil
      return true
    }
    if close { _ = connection.close() as EventLoopFuture<Void> }
  }

  private func startHolding(number: Int, from client: PostgresClient) {
    let owner = WeakHeldConnection(self)
    let idleRelease = idleRelease
    let failure = failure
    let logger = logger
    let task = Task {
      do {
        try await client.withConnection { connection in
          guard owner.value != nil else { return }
          // A connection on which the statement cannot be prepared is not held.
          let submit = try await connection.prepare(query: DelayStatement.committedSQL).get()
          guard
            owner.value?.hold(Held(connection: connection, submit: submit), number: number)
              == true
          else { return }
          // Given back once the pool knows that it closed: the pool's own callback on
          // `closeFuture` runs in the same pass as this one, before the next task of the event
          // loop. A closed connection given back sooner could be lent again, and a query on it
          // would wait for an answer that never comes.
          connection.closeFuture.whenComplete { _ in
            connection.eventLoop.execute { owner.value?.closed(number: number) }
          }
          while await sleep(for: idleRelease) {
            guard let held = owner.value, !held.releaseIfIdle(connection, after: idleRelease)
            else { return }
          }
        }
      } catch {
        // Cancelled: the queue stopped holding (it is gone, or its connection broke).
        if !(error is CancellationError || Task.isCancelled) {
          logger.notice(
            "no connection held for single delay calls; they go through the pool",
            metadata: ["dpd.error": "\(failure.wrapping(error, sent: false))"])
        }
      }
      owner.value?.holderEnded(number: number)
    }
    let ended = state.withLock { state -> Bool in
      guard state.holder?.number == number else { return true }
      state.holder?.task = task
      return false
    }
    if ended { task.cancel() }
  }

  /// The holder got `connection`: false when it must not hold it (its turn is over).
  private func hold(_ held: Held, number: Int) -> Bool {
    state.withLock { state in
      guard state.holder?.number == number, !held.connection.isClosed else { return false }
      state.held = held
      state.inUse = false
      state.lastUse = .now
      return true
    }
  }

  /// Stops holding `connection` when it has not been used for `idle`; returns whether it did.
  private func releaseIfIdle(_ connection: PostgresConnection, after idle: Duration) -> Bool {
    state.withLock { state in
      guard state.connection === connection else { return true }
      guard !state.inUse, ContinuousClock.now - state.lastUse >= idle else { return false }
      state.held = nil
      return true
    }
  }

  /// The connection of holder `number` closed, and the pool knows: the holder gives it back (a
  /// statement still on it fails with the closed connection's error).
  private func closed(number: Int) {
    let holder = state.withLock { state -> Task<Void, Never>? in
      guard state.holder?.number == number else { return nil }
      state.held = nil
      state.inUse = false
      return state.holder?.task
    }
    holder?.cancel()
  }

  private func holderEnded(number: Int) {
    state.withLock { state in
      guard state.holder?.number == number else { return }
      state.holder = nil
      state.held = nil
      state.inUse = false
    }
  }
}

/// The holder's weak reference to its ``HeldConnection``.
private final class WeakHeldConnection: Sendable {
  private let reference: Locked<Weak>
  private struct Weak { weak var value: HeldConnection? }

  init(_ value: HeldConnection) { reference = Locked(Weak(value: value)) }
  var value: HeldConnection? { reference.withLock { $0.value } }
}
