import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P6: bad input and an unusable database get a clear, typed error and lose nothing.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresBadInputTests {
  @Test func emptyKeyThrowsATypedErrorAndWritesNothing() async throws {
    try await TestDatabase.withQueue("empty-key") { queue, _ async throws in
      await #expect(throws: PostgresDelayedPreemptiveQueueError.emptyKey) {
        try await queue.delay("", for: .zero, value: "x")
      }
      await #expect(throws: PostgresDelayedPreemptiveQueueError.emptyKey) {
        try await queue.cancel("")
      }
      await #expect(throws: PostgresDelayedPreemptiveQueueError.emptyKey) {
        try await queue.flush("")
      }
      #expect(try await queue.pendingCount() == 0)
    }
  }

  @Test func valueThatDoesNotEncodeThrowsATypedErrorAndWritesNothing() async throws {
    try await TestDatabase.withClient { client, configuration in
      let queue = PostgresDelayedPreemptiveQueue<Double>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName("encode"))
      try await queue.migrate()
      try await queue.delay("k", for: .seconds(5), value: 1.5)
      do {
        try await queue.delay("k", for: .seconds(5), value: .nan)
        Issue.record("a NaN value was accepted")
      } catch let error as PostgresDelayedPreemptiveQueueError {
        guard case .valueNotEncodable(let key, _) = error else {
          Issue.record("unexpected \(error)")
          return
        }
        #expect(key == "k")
      }
      #expect(try await queue.pendingCount() == 1)
      #expect(try await queue.cancel("k"))
    }
  }

  @Test func unreachableDatabaseErrorNamesHostAndPort() async throws {
    var configuration = try TestDatabase.configuration()
    configuration = PostgresClient.Configuration(
      host: "127.0.0.1", port: 1, username: configuration.username, password: nil,
      database: configuration.database, tls: .disable)
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    defer { running.cancel() }
    var queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: "unreachable")
    queue.connectionTimeout = .seconds(2)
    do {
      try await queue.delay("k", for: .zero, value: "x")
      Issue.record("a delay on an unreachable database succeeded")
    } catch let error as PostgresDelayedPreemptiveQueueError {
      guard case .databaseUnreachable(let host, let port, _) = error else {
        Issue.record("unexpected \(error)")
        return
      }
      #expect(host == "127.0.0.1")
      #expect(port == 1)
      #expect(error.description.contains("127.0.0.1:1"))
    }
  }

  /// Migrating is idempotent and safe from several replicas at once; a newer schema version on
  /// the server is a typed error. Runs in a database of its own, so that changing the version
  /// cannot disturb the other tests.
  @Test func migrateIsIdempotentAndRefusesANewerSchema() async throws {
    let database = "dpd_schema_\(UUID().uuidString.prefix(8).lowercased())"
    try await TestDatabase.withClient { client, _ in
      try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"))
    }
    var configuration = try TestDatabase.configuration()
    configuration.database = database
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: "schema")
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<4 { group.addTask { try await queue.migrate() } }
      try await group.waitForAll()
    }
    try await queue.migrate()
    try await queue.delay("k", for: .seconds(60), value: "kept")
    try await client.query("UPDATE dpd_schema SET version = 99")
    await #expect(
      throws: PostgresDelayedPreemptiveQueueError.newerSchema(found: 99, supported: Schema.version)
    ) {
      try await queue.migrate()
    }
    #expect(try await queue.isPending("k"))
    running.cancel()
    try await TestDatabase.withClient { client, _ in
      try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(database) WITH (FORCE)"))
    }
  }

  @Test(arguments: [
    (["--name", ""], "name must not be empty"),
    (["--leading"], "options.leading is not supported"),
    (["--name", String(repeating: "n", count: 300)], "name must be at most 256 bytes"),
  ])
  func programmerErrorStopsWithAClearMessage(arguments: [String], message: String) async throws {
    let worker = try WorkerProcess(arguments)
    let exit = try #require(try await worker.waitForExit())
    #expect(exit.reason == .uncaughtSignal)
    #expect(worker.errorText().contains(message))
  }
}

/// Rule P12 through the queue: a connection that the server refuses fails the call with the
/// server's reason at once, not after `connectionTimeout`, and never shows the password.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresRefusedConnectionTests {
  @Test(arguments: [
    ("dpd_password_user", "wrong-s3cret", "dpd", "28P01"),
    ("postgres", nil, "no_such_database", "3D000"),
  ])
  func refusedConnectionFailsTheCallWithItsReasonAtOnce(
    user: String, password: String?, database: String, sqlState: String
  ) async throws {
    let good = try TestDatabase.configuration()
    let configuration = PostgresClient.Configuration(
      host: good.host ?? "127.0.0.1", port: good.port ?? 5432, username: user,
      password: password, database: database, tls: .disable)
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    defer { running.cancel() }
    let queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: "refused")
    let start = ContinuousClock.now
    do {
      try await queue.delay("k", for: .zero, value: "x")
      Issue.record("a delay with a refused connection succeeded")
    } catch let error as PostgresDelayedPreemptiveQueueError {
      let elapsed = ContinuousClock.now - start
      guard case .databaseUnreachable(_, _, let reason) = error else {
        Issue.record("unexpected \(error)")
        return
      }
      print("refused (\(sqlState)): \(error) after \(elapsed)")
      #expect(reason.contains(sqlState))
      #expect(elapsed < .seconds(3), "connectionTimeout is \(queue.connectionTimeout)")
      #expect(!error.description.contains("s3cret"))
    }
  }
}
