import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The connection a queue keeps for its `delay` statements (`HeldConnection`), against the real
/// server: single calls go on it, a call on it is bounded by `connectionTimeout` however long
/// the server takes (and says its outcome is unknown), it is given back to the pool when idle,
/// when its queue is gone, when it closed and when the client shuts down, and a small pool never
/// lends one.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresHeldConnectionTests {
  /// Submits distinct keys one after another until the queue holds its connection; returns how
  /// many it submitted.
  static func untilHeld(_ queue: PostgresDelayedPreemptiveQueue<String>) async throws -> Int {
    var submitted = 0
    let end = ContinuousClock.now + .seconds(10)
    while !queue.heldConnection.isHolding, ContinuousClock.now < end {
      try await queue.delay("warm-\(UUID().uuidString)", for: .seconds(3600), value: "w")
      submitted += 1
      if submitted > 2 { try await Task.sleep(for: .milliseconds(20)) }
    }
    #expect(queue.heldConnection.isHolding, "the queue never held a connection")
    return submitted
  }

  static func count(_ queue: PostgresDelayedPreemptiveQueue<String>, client: PostgresClient)
    async throws -> Int
  {
    let rows = try await client.query(
      "SELECT count(*) FROM dpd_bursts WHERE name = \(queue.name) AND NOT idle")
    for try await count in rows.decode(Int.self) { return count }
    return -1
  }

  /// Once a queue holds its connection, each `delay` from one caller goes on it, and every one
  /// is written.
  @Test func singleCallsGoOnTheHeldConnection() async throws {
    try await TestDatabase.withQueue("held-single") { queue, client in
      let warm = try await Self.untilHeld(queue)
      let before = queue.heldConnection.statementsSent
      for index in 0..<50 {
        try await queue.delay("k\(index)", for: .seconds(3600), value: "v\(index)")
      }
      #expect(queue.heldConnection.statementsSent - before == 50)
      #expect(try await Self.count(queue, client: client) == warm + 50)
    }
  }

  /// A handle made for one call, a pool of fewer than four connections, and a queue made
  /// without the client's configuration never hold a connection.
  @Test func aSingleCallOrASmallPoolHoldsNone() async throws {
    var small = try TestDatabase.configuration()
    small.options.maximumConnections = HeldConnection.minimumPool - 1
    let client = PostgresClient(configuration: small)
    let running = Task { await client.run() }
    defer { running.cancel() }
    let name = TestDatabase.uniqueName("held-none")
    let smallPool = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: small, name: name)
    try await smallPool.migrate()
    let unconfigured = PostgresDelayedPreemptiveQueue<String>(client: client, name: name)
    for index in 0..<20 {
      try await smallPool.delay("s\(index)", for: .seconds(3600), value: "v")
      try await unconfigured.delay("u\(index)", for: .seconds(3600), value: "v")
    }
    try await TestDatabase.withClient { client, configuration in
      let once = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: name)
      try await once.delay("once", for: .seconds(3600), value: "v")
      try await Task.sleep(for: .milliseconds(500))
      #expect(!once.heldConnection.isHolding)
    }
    #expect(!smallPool.heldConnection.isHolding && smallPool.heldConnection.statementsSent == 0)
    #expect(
      !unconfigured.heldConnection.isHolding && unconfigured.heldConnection.statementsSent == 0)
  }

  /// A call on the held connection that gets no answer (its row is locked by another
  /// transaction) throws `outcomeUnknown` at `connectionTimeout`, not later; the connection is
  /// closed and given back, the next call goes through, and the one that timed out is applied
  /// once the lock is gone: "unknown" was the truth.
  @Test func aCallWithoutAnAnswerIsBoundedAndItsConnectionReplaced() async throws {
    try await TestDatabase.withQueue("held-bound") { made, client in
      // The set-up goes through the queue as made (its default connectionTimeout), so that a
      // loaded machine's first connection and prepare cannot miss the bound under test, which
      // only the copy with one second has; the copies share the held connection.
      try await made.delay("locked", for: .seconds(3600), value: "first")
      _ = try await Self.untilHeld(made)
      var bounded = made
      bounded.connectionTimeout = .seconds(1)
      let queue = bounded
      let locked = Latch()
      let unlock = Latch()
      let locker = Task {
        try await client.withConnection { connection in
          try await connection.query("BEGIN", logger: queue.logger)
          try await connection.query(
            """
            SELECT 1 FROM dpd_bursts WHERE name = \(queue.name) AND key = 'locked' FOR UPDATE
            """, logger: queue.logger)
          locked.open()
          try await unlock.wait()
          try await connection.query("ROLLBACK", logger: queue.logger)
        }
      }
      #expect(try await TestDatabase.eventually { locked.isOpen })
      let sentBefore = queue.heldConnection.statementsSent
      let start = ContinuousClock.now
      var thrown: (any Error)?
      do {
        try await queue.delay("locked", for: .seconds(3600), value: "second")
      } catch {
        thrown = error
      }
      let elapsed = ContinuousClock.now - start
      unlock.open()
      try await locker.value
      #expect(queue.heldConnection.statementsSent == sentBefore + 1, "not sent on the held one")
      guard
        case .outcomeUnknown(let key, _, _, let reason)? =
          thrown as? PostgresDelayedPreemptiveQueueError
      else {
        Issue.record("expected outcomeUnknown, got \(String(describing: thrown))")
        return
      }
      #expect(
        key == "locked" && reason.contains("no answer within"),
        "\(String(describing: key)): \(reason)")
      #expect(elapsed >= .seconds(1) && elapsed < .seconds(4), "\(elapsed)")
      // The timed-out submission is applied once its row is free.
      let applied = try await TestDatabase.eventually {
        let rows = try await client.query(
          """
          SELECT submissions FROM dpd_bursts WHERE name = \(queue.name) AND key = 'locked'
          """)
        for try await submissions in rows.decode(Int.self) { return submissions == 2 }
        return false
      }
      #expect(applied)
      // The next calls (through the queue as made, as the set-up: a new connection is leased
      // and prepared) go through, and the queue holds a connection again.
      try await made.delay("after", for: .seconds(3600), value: "v")
      _ = try await Self.untilHeld(made)
      let resumed = queue.heldConnection.statementsSent
      try await queue.delay("after-2", for: .seconds(3600), value: "v")
      #expect(queue.heldConnection.statementsSent == resumed + 1)
    }
  }

  /// The server ends the held connection's session while it is unused, ten times in a row: each
  /// time the next `delay` goes through at once (on a connection of the pool, never on the
  /// closed one, and never on one that the pool lent again before it learnt of the close), and
  /// the queue then holds a new connection.
  ///
  /// Only the call after each close is bounded (3 s): the calls that make the queue hold a
  /// connection, and the one on the new connection, go through the queue as made (its
  /// `connectionTimeout`), as in the test above, so that a loaded machine's slow call there
  /// cannot fail the test. The queue and its bounded copy share the held connection.
  @Test func aConnectionClosedByTheServerIsReplaced() async throws {
    try await TestDatabase.withQueue("held-closed") { made, client in
      var bounded = made
      bounded.connectionTimeout = .seconds(3)
      let queue = bounded
      for round in 0..<10 {
        _ = try await Self.untilHeld(made)
        let connection = try #require(queue.heldConnection.take(from: client)?.connection)
        let pid = try await connection.query("SELECT pg_backend_pid()", logger: queue.logger)
          .decode(Int32.self).first { _ in true }
        queue.heldConnection.giveBack(connection, broken: false)
        let backend = try #require(pid)
        try await client.query("SELECT pg_terminate_backend(\(backend))")
        #expect(try await TestDatabase.eventually { connection.isClosed })
        try await queue.delay("after-close-\(round)", for: .seconds(3600), value: "v")
        _ = try await Self.untilHeld(made)
        let replaced = try #require(queue.heldConnection.take(from: client)?.connection)
        #expect(replaced !== connection && !replaced.isClosed)
        queue.heldConnection.giveBack(replaced, broken: false)
        let sent = queue.heldConnection.statementsSent
        try await made.delay("on-new-\(round)", for: .seconds(3600), value: "v")
        #expect(queue.heldConnection.statementsSent == sent + 1, "not sent on the new one")
      }
    }
  }

  /// A held connection goes back to the pool after `idleRelease` without a statement, and when
  /// its owner is gone: a pool of one connection serves another caller again.
  @Test func anIdleOrOrphanedConnectionGoesBackToThePool() async throws {
    var one = try TestDatabase.configuration()
    one.options.maximumConnections = 1
    let client = PostgresClient(configuration: one)
    let running = Task { await client.run() }
    defer { running.cancel() }
    // The holder prepares `dpd_submit`'s call, which a migration installs.
    try await PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: one, name: TestDatabase.uniqueName("held-idle")
    ).migrate()

    let idle = HeldConnection(enabled: true, idleRelease: .milliseconds(300))
    #expect(idle.take(from: client) == nil)  // the first statement starts nothing
    #expect(idle.take(from: client) == nil)  // the second starts holding
    #expect(try await TestDatabase.eventually { idle.isHolding })
    #expect(try await TestDatabase.eventually { !idle.isHolding })
    #expect(try await Self.answers(client, within: .seconds(30)))

    let orphaned = Locked<HeldConnection?>(
      HeldConnection(enabled: true, idleRelease: .seconds(600)))
    for _ in 0..<2 { _ = orphaned.withLock { $0?.take(from: client) } }
    #expect(try await TestDatabase.eventually { orphaned.withLock { $0?.isHolding == true } })
    // While it is held, the pool's only connection is lent out.
    #expect(!(try await Self.answers(client, within: .milliseconds(300))))
    orphaned.withLock { $0 = nil }
    #expect(try await Self.answers(client, within: .seconds(30)))
  }

  /// Cancelling the client's `run` while the queue holds a connection ends it promptly: the
  /// pool closes the held connection, and the queue lets it go.
  @Test func theClientShutsDownWhileAConnectionIsHeld() async throws {
    let configuration = try TestDatabase.configuration()
    let client = PostgresClient(configuration: configuration)
    let ended = Latch()
    let running = Task {
      await client.run()
      ended.open()
    }
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: TestDatabase.uniqueName("held-stop"))
    try await queue.migrate()
    _ = try await Self.untilHeld(queue)
    running.cancel()
    #expect(try await TestDatabase.eventually { ended.isOpen }, "run() did not end")
    #expect(try await TestDatabase.eventually { !queue.heldConnection.isHolding })
  }

  /// Whether `client` answers a query within `limit` (the query is abandoned otherwise).
  static func answers(_ client: PostgresClient, within limit: Duration) async throws -> Bool {
    let answered = Latch()
    let query = Task {
      try await client.query("SELECT 1")
      answered.open()
    }
    let result = try await TestDatabase.eventually(within: limit) { answered.isOpen }
    query.cancel()
    _ = try? await query.value
    return result
  }
}
