import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// A `ServiceGroup` of the client and a `PostgresBurstWorker` is all a service writes: the
/// worker waits for its client, migrates a fresh database (or waits for a migration it may not
/// make itself), and then works; postgres-nio never warns that a connection was leased before
/// the client ran.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresWorkerStartTests {
  /// A group of `services` with no signal handlers (the tests end it themselves).
  static func group(_ services: [any Service], logs: LogCollector) -> ServiceGroup {
    ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: services.map { .init(service: $0) }, gracefulShutdownSignals: [],
        cancellationSignals: [], logger: logs.logger(label: "group")))
  }

  /// The parts of a service: a client on `url` whose background logger and queue log to `logs`,
  /// and a worker that records its runs.
  struct Replica: Sendable {
    let client: PostgresClient
    let queue: PostgresDelayedPreemptiveQueue<String>
    let worker: PostgresBurstWorker<String>
    let runs = RunList()

    init(url: String, name: String, logs: LogCollector) throws {
      let configuration = try PostgresURL.configuration(url)
      client = PostgresClient(
        configuration: configuration, backgroundLogger: logs.logger(label: "postgres-nio"))
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: name,
        logger: logs.logger(label: "queue"))
      queue.safetyPoll = .milliseconds(200)
      queue.outageBackoff = .milliseconds(400)
      self.queue = queue
      let runs = runs
      worker = PostgresBurstWorker(queue: queue) { run in runs.append(run.key, run.value) }
    }
  }

  /// postgres-nio's warning for a connection leased before `run()`.
  static let notRunningWarning = "hasn't been called yet"

  @Test func clientRunStateIsReadable() async throws {
    let client = PostgresClient(configuration: try TestDatabase.configuration())
    #expect(client.hasStartedRunning == false)
    let running = Task { await client.run() }
    defer { running.cancel() }
    #expect(try await TestDatabase.eventually { client.hasStartedRunning == true })
  }

  @Test func groupOfTheClientAndTheWorkerMigratesAFreshDatabaseAndRunsItsBursts() async throws {
    try await TestDatabase.withFreshDatabase { url in
      let logs = LogCollector()
      let service = try Replica(url: url, name: "reindex", logs: logs)
      let group = Self.group([service.client, service.worker], logs: logs)
      let running = Task { try await group.run() }
      // Any replica may submit once the schema is there; the worker made it. (The test's own
      // calls, too, wait until the group runs the client.)
      try await service.queue.waitForRunningClient()
      #expect(
        try await TestDatabase.eventually(within: .seconds(30)) {
          try await service.queue.installedSchemaVersion() == Schema.version
        })
      try await service.queue.delay("doc-1", for: .milliseconds(50), value: "edit")
      #expect(try await TestDatabase.eventually { service.runs.values("doc-1") == ["edit"] })
      #expect(try await service.queue.drains(within: .seconds(30)))
      await group.triggerGracefulShutdown()
      try await running.value
      #expect(logs.contains("schema ready", atLeast: .info))
      #expect(logs.contains("worker stopped", atLeast: .info))
      #expect(!logs.contains(Self.notRunningWarning, atLeast: .trace), "\(logs.lines)")
    }
  }

  /// The group starts its services at once; the worker's first lease waits for the client's
  /// `run()`, start after start.
  @Test func groupNeverLeasesAConnectionBeforeTheClientRuns() async throws {
    try await TestDatabase.withQueue("start") { migrated, _ in
      let logs = LogCollector()
      for _ in 0..<20 {
        let service = try Replica(url: TestDatabase.url, name: migrated.name, logs: logs)
        let group = Self.group([service.client, service.worker], logs: logs)
        let running = Task { try await group.run() }
        let started = logs.lines.filter { $0.message == "worker started" }.count
        #expect(
          try await TestDatabase.eventually {
            logs.lines.filter { $0.message == "worker started" }.count > started
          })
        await group.triggerGracefulShutdown()
        try await running.value
      }
      #expect(logs.lines.filter { $0.message == "schema ready" }.count == 20)
      #expect(!logs.contains(Self.notRunningWarning, atLeast: .trace), "\(logs.lines)")
    }
  }

  @Test func workerWaitsForAClientThatDoesNotRunAndSaysSo() async throws {
    try await TestDatabase.withQueue("idle-client") { migrated, _ in
      let logs = LogCollector()
      let service = try Replica(url: TestDatabase.url, name: migrated.name, logs: logs)
      let group = Self.group([service.worker], logs: logs)
      let running = Task { try await group.run() }
      #expect(
        try await TestDatabase.eventually {
          logs.contains("the PostgresClient does not run", atLeast: .warning)
        })
      #expect(!logs.contains("schema ready", atLeast: .trace), "nothing leased before it runs")
      let client = Task { await service.client.run() }
      defer { client.cancel() }
      #expect(try await TestDatabase.eventually { logs.contains("worker started", atLeast: .info) })
      #expect(logs.contains("the PostgresClient runs", atLeast: .notice))
      try await migrated.delay("k", for: .zero, value: "v")
      #expect(try await TestDatabase.eventually { service.runs.values("k") == ["v"] })
      await group.triggerGracefulShutdown()
      try await running.value
      #expect(!logs.contains(Self.notRunningWarning, atLeast: .trace), "\(logs.lines)")
    }
  }

  /// A role without CREATE on the schema (PostgreSQL 15 grants none by default) cannot migrate:
  /// its worker waits, says why, and starts once a role that may has migrated.
  @Test func roleThatMayNotMigrateWaitsUntilAnotherRoleMigrates() async throws {
    let role = "dpd_app_\(UUID().uuidString.prefix(8).lowercased())"
    try await TestDatabase.administer("CREATE ROLE \(role) LOGIN")
    do {
      try await TestDatabase.withFreshDatabase { url in
        let appURL = url.replacingOccurrences(
          of: "postgres://postgres@", with: "postgres://\(role)@")
        let logs = LogCollector()
        let service = try Replica(url: appURL, name: "reindex", logs: logs)
        let group = Self.group([service.client, service.worker], logs: logs)
        let running = Task { try await group.run() }
        #expect(
          try await TestDatabase.eventually {
            logs.contains("this role may not migrate the schema", atLeast: .warning)
          }, "\(logs.lines)")
        let warning = try #require(logs.lines.first { $0.message.contains("may not migrate") })
        #expect(warning.message.contains("SQLSTATE 42501"), "\(warning)")
        #expect(warning.message.contains("schema found: none, needed: version \(Schema.version)"))
        try await Task.sleep(for: .milliseconds(500))
        #expect(!logs.contains("worker started", atLeast: .trace), "it claims nothing yet")

        try await TestDatabase.withClient(url: url) { client, configuration in
          let owner = PostgresDelayedPreemptiveQueue<String>(
            client: client, configuration: configuration, name: "reindex")
          // The grants reach the tables as migrate() creates them, as an operator's default
          // privileges would: granted after migrate(), the worker could look at the schema in
          // between, find it unreadable, and start without waiting for it.
          for grant in [
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE "
              + "ON TABLES TO \(role)",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE ON SEQUENCES TO \(role)",
          ] {
            try await client.query(PostgresQuery(unsafeSQL: grant))
          }
          try await owner.migrate()
          #expect(
            try await TestDatabase.eventually(within: .seconds(30)) {
              logs.contains("worker started", atLeast: .info)
            })
          #expect(logs.contains("schema ready: another role migrated it", atLeast: .notice))
          try await owner.delay("doc-1", for: .zero, value: "edit")
          #expect(try await TestDatabase.eventually { service.runs.values("doc-1") == ["edit"] })
        }
        await group.triggerGracefulShutdown()
        try await running.value
      }
    } catch {
      try? await TestDatabase.administer("DROP ROLE \(role)")
      throw error
    }
    try await TestDatabase.administer("DROP ROLE \(role)")
  }
}

/// The worker's start and its LISTEN against the fault server: a database that is down when the
/// worker starts, and a listener whose session the server ends.
extension PostgresOutageTests {
  @Test func workerStartedWhileTheDatabaseIsDownMigratesOnceItIsUp() async throws {
    try await TestDatabase.withFreshDatabase(on: FaultServer.url) { url in
      let logs = LogCollector()
      let service = try PostgresWorkerStartTests.Replica(url: url, name: "reindex", logs: logs)
      try await FaultServer.control("down")
      let group = PostgresWorkerStartTests.group([service.client, service.worker], logs: logs)
      let running = Task { try await group.run() }
      do {
        #expect(
          try await TestDatabase.eventually(within: .seconds(20)) {
            logs.contains("database unavailable while migrating the schema", atLeast: .warning)
          }, "\(logs.lines)")
        try await Task.sleep(for: .seconds(1))
        #expect(!logs.contains("worker started", atLeast: .trace))
        try await FaultServer.control("up")
      } catch {
        try await FaultServer.control("up")
        throw error
      }
      #expect(
        try await TestDatabase.eventually(within: .seconds(30)) {
          logs.contains("worker started", atLeast: .info)
        }, "\(logs.lines)")
      #expect(logs.contains("database available again for migrating the schema", atLeast: .notice))
      try await service.queue.delay("doc-1", for: .zero, value: "edit")
      #expect(try await TestDatabase.eventually { service.runs.values("doc-1") == ["edit"] })
      await group.triggerGracefulShutdown()
      try await running.value
    }
  }

  /// The listener's outage warning names the server's reason and SQLSTATE, never the driver's
  /// generic description.
  @Test func listenersOutageWarningNamesTheServersReason() async throws {
    let logs = LogCollector()
    let service = try PostgresWorkerStartTests.Replica(
      url: FaultServer.url, name: TestDatabase.uniqueName("listen"), logs: logs)
    let group = PostgresWorkerStartTests.group([service.client, service.worker], logs: logs)
    let running = Task { try await group.run() }
    #expect(try await TestDatabase.eventually { logs.contains("worker started", atLeast: .info) })
    try await TestDatabase.withClient(url: FaultServer.url) { client, _ in
      #expect(
        try await TestDatabase.eventually {
          try await client.query(
            "SELECT 1 FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()"
          ).collect().count > 0
        })
      try await client.query(
        """
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()
        """)
    }
    #expect(
      try await TestDatabase.eventually {
        logs.contains("database unavailable while listening for wake-ups", atLeast: .warning)
      }, "\(logs.lines)")
    let warning = try #require(
      logs.lines.first { $0.message.contains("while listening for wake-ups") })
    print("listener's warning: \(warning)")
    #expect(warning.message.contains("SQLSTATE 57P01"), "\(warning)")
    await group.triggerGracefulShutdown()
    try await running.value
    for line in logs.lines {
      #expect(!line.message.contains("Generic description"), "\(line)")
    }
  }
}
