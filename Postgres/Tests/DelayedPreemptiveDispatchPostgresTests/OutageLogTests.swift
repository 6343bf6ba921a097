import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// Rules P9 and P12 for a database that cannot be reached: the worker logs the outage as a
/// warning, and no line, at any level, ever holds the password. Port 1 of the loopback address:
/// nothing listens there, so these tests need no server and always run.
@Suite struct PostgresOutageLogTests {
  /// Runs `body` with a queue whose client talks to `url` (nothing listening), logging to `logs`.
  static func withUnreachableQueue(
    _ url: String, logs: LogCollector,
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>) async throws -> Void
  ) async throws {
    let configuration = try PostgresURL.configuration(url)
    let client = PostgresClient(configuration: configuration, backgroundLogger: logs.logger())
    let running = Task { await client.run() }
    defer { running.cancel() }
    var queue = PostgresDelayedPreemptiveQueue<String>(
      client: client, configuration: configuration, name: TestDatabase.uniqueName("outage"),
      logger: logs.logger())
    queue.connectionTimeout = .milliseconds(300)
    queue.outageBackoff = .milliseconds(200)
    try await body(queue)
  }

  @Test func workerLogsTheOutageAsAWarningAndKeepsRunning() async throws {
    let logs = LogCollector()
    try await Self.withUnreachableQueue("postgres://postgres@127.0.0.1:1/dpd", logs: logs) {
      queue in
      let worker = Task { try await queue.run { _ in } }
      #expect(
        try await TestDatabase.eventually {
          logs.contains("database unavailable", atLeast: .warning)
        })
      #expect(!worker.isCancelled)
      worker.cancel()
      try await worker.value  // an outage is no reason to throw
    }
    let warnings = logs.lines.filter { $0.message.contains("database unavailable") }
    #expect(warnings.allSatisfy { $0.level == .warning && $0.metadata.contains("dpd.queue=") })
    #expect(warnings.contains { $0.message.contains("127.0.0.1:1") }, "\(warnings)")
  }

  @Test func noLogLineOrErrorHoldsThePassword() async throws {
    let logs = LogCollector()
    let errors = Locked<[String]>([])
    try await Self.withUnreachableQueue("postgres://u:s3cret@127.0.0.1:1/x", logs: logs) {
      queue in
      let worker = Task { try await queue.run { _ in } }
      for call in 0..<3 {
        do {
          switch call {
          case 0: try await queue.migrate()
          case 1: try await queue.delay("k", for: .zero, value: "v")
          default: _ = try await queue.failures()
          }
          Issue.record("call \(call) succeeded on an unreachable database")
        } catch {
          errors.withLock { $0.append(String(describing: error)) }
        }
      }
      try await Task.sleep(for: .seconds(2))  // the worker's outage lines
      worker.cancel()
      try await worker.value
    }
    #expect(logs.contains("database unavailable", atLeast: .warning))
    #expect(errors.withLock { $0.count } == 3)
    for text in logs.lines.map(\.description) + errors.withLock({ $0 }) {
      #expect(!text.contains("s3cret"), "\(text)")
    }
  }
}
