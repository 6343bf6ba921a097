import DelayedPreemptiveDispatch
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The server under test, from `DPD_POSTGRES_URL` (CI sets it from `scripts/postgres.sh start`).
///
/// Unset: every test here is skipped with the reason printed, on a developer machine only.
/// Set but unreachable: the tests fail, because every call throws `databaseUnreachable`.
enum TestDatabase {
  static let url = ProcessInfo.processInfo.environment["DPD_POSTGRES_URL"] ?? ""
  static let isConfigured: Bool = {
    if url.isEmpty {
      print(
        "DelayedPreemptiveDispatchPostgresTests: skipped: DPD_POSTGRES_URL is unset. "
          + "Run: export DPD_POSTGRES_URL=$(scripts/postgres.sh start)")
    }
    return !url.isEmpty
  }()
  static let skipReason: Comment =
    "DPD_POSTGRES_URL is unset; run: export DPD_POSTGRES_URL=$(scripts/postgres.sh start)"

  static func configuration(url: String = url) throws -> PostgresClient.Configuration {
    try PostgresURL.configuration(url)
  }

  /// A queue name of its own for each test, so that tests sharing the database stay apart.
  static func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8))"
  }

  /// Runs `body` with a running client; shuts the client down afterwards.
  @discardableResult
  static func withClient<Result: Sendable>(
    url: String = url, maximumConnections: Int? = nil,
    _ body: @Sendable (PostgresClient, PostgresClient.Configuration) async throws -> Result
  ) async throws -> Result {
    var configuration = try configuration(url: url)
    if let maximumConnections { configuration.options.maximumConnections = maximumConnections }
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    defer { running.cancel() }
    return try await body(client, configuration)
  }

  /// A migrated queue of `String` values with a fresh name, and its client.
  @discardableResult
  static func withQueue<Result: Sendable>(
    _ prefix: String, options: DelayOptions = DelayOptions(), lease: Duration = .seconds(30),
    maxAttempts: Int = 5,
    retryBackoff: Duration = .seconds(1), url: String = url,
    _ body:
      @Sendable (PostgresDelayedPreemptiveQueue<String>, PostgresClient) async throws ->
      Result
  ) async throws -> Result {
    try await withClient(url: url) { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: uniqueName(prefix),
        options: options, lease: lease, maxAttempts: maxAttempts)
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = retryBackoff
      try await queue.migrate()
      return try await body(queue, client)
    }
  }

  /// Runs `body` with the URL of a database of its own, made for it on the server of `url` and
  /// dropped afterwards: never migrated, so that a test can start from nothing.
  @discardableResult
  static func withFreshDatabase<Result: Sendable>(
    on url: String = url, _ body: @Sendable (String) async throws -> Result
  ) async throws -> Result {
    let database = "dpd_fresh_\(UUID().uuidString.prefix(8).lowercased())"
    try await administer("CREATE DATABASE \(database)", on: url)
    let freshURL = String(url[..<(url.lastIndex(of: "/") ?? url.endIndex)]) + "/" + database
    do {
      let result = try await body(freshURL)
      try await administer("DROP DATABASE \(database) WITH (FORCE)", on: url)
      return result
    } catch {
      try? await administer("DROP DATABASE \(database) WITH (FORCE)", on: url)
      throw error
    }
  }

  /// Runs one statement as the superuser of the server of `url` (the test servers trust it).
  static func administer(_ sql: String, on url: String = url) async throws {
    try await withClient(url: url) { client, _ in
      try await client.query(PostgresQuery(unsafeSQL: sql))
    }
  }

  /// Runs `work` (a worker) in a task of its own while `body` runs, then cancels it and waits
  /// for it; when `body` throws, the worker is cancelled and waited for too.
  static func whileWorking<Result: Sendable>(
    _ work: @escaping @Sendable () async throws -> Void, _ body: () async throws -> Result
  ) async throws -> Result {
    let worker = Task { try await work() }
    do {
      let result = try await body()
      worker.cancel()
      try await worker.value
      return result
    } catch {
      worker.cancel()
      _ = try? await worker.value
      throw error
    }
  }

  /// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
  ///
  /// The default window is 30 s, as `drains(within:)` uses: in CI the main group starts all its
  /// tests at once on 2 cores, and in that first phase a test that needs a dozen round trips
  /// and a retry (`aThrowingHandlersWritesRollBackAndItIsRetried`) took 11 s locally and more
  /// than 10 s in CI, while it takes 0.6 s alone. Every caller waits for something that must
  /// happen, so the window only bounds how long a failure takes to show.
  static func eventually(
    within timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
    _ condition: @Sendable () async throws -> Bool
  ) async throws -> Bool {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
      if try await condition() { return true }
      try await Task.sleep(for: interval)
    }
    return try await condition()
  }
}

/// What a test handler saw: each run's key, value, and start and end instants (wall clock, the
/// same machine as the database), and how often a run of a key started while another one ran.
actor RunLog {
  struct Run: Sendable {
    var key: String
    var value: String
    var started: Date
    var finished: Date?
  }

  private(set) var all: [Run] = []
  private(set) var overlapCount = 0
  private var inFlight: [String: Int] = [:]

  func values(_ key: String) -> [String] { all.filter { $0.key == key }.map(\.value) }
  func count(_ key: String) -> Int { all.filter { $0.key == key }.count }

  func started(_ key: String, _ value: String) -> Int {
    all.append(Run(key: key, value: value, started: Date()))
    inFlight[key, default: 0] += 1
    if inFlight[key, default: 0] > 1 { overlapCount += 1 }
    return all.count - 1
  }

  func finished(_ index: Int) {
    inFlight[all[index].key, default: 1] -= 1
    all[index].finished = Date()
  }

  /// Records a run around `work`.
  nonisolated func record(
    _ key: String, _ value: String, work: @Sendable () async throws -> Void = {}
  ) async throws {
    let index = await started(key, value)
    do {
      try await work()
    } catch {
      await finished(index)
      throw error
    }
    await finished(index)
  }
}

extension PostgresDelayedPreemptiveQueue {
  /// Whether `pendingCount()` reaches 0 within `timeout`.
  /// `every`: how often to count; a large backlog wants a longer interval, so that counting
  /// does not load the server that drains it.
  func drains(within timeout: Duration, every interval: Duration = .milliseconds(20))
    async throws -> Bool
  {
    try await TestDatabase.eventually(within: timeout, every: interval) {
      try await pendingCount() == 0
    }
  }

  /// Runs a worker with `handler` while `body` runs, then cancels it and waits for it to return.
  func withWorker<Result: Sendable>(
    concurrency: Int = 4, handler: @escaping @Sendable (String, Value) async throws -> Void,
    _ body: () async throws -> Result
  ) async throws -> Result {
    try await TestDatabase.whileWorking(
      { try await run(concurrency: concurrency, handler: handler) }, body)
  }
}
