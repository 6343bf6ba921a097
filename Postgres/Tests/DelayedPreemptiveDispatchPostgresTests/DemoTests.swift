import Foundation
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The demo (`dpd-postgres-demo`, an example target and no product) as the README runs it: a
/// worker in a `ServiceGroup` with its client, bursts submitted through its `submit` command,
/// and a graceful stop.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresDemoTests {
  @Test func demoWorkerRunsSubmittedBurstsUntilSIGTERMThenStopsAndExitsZero() async throws {
    try await TestDatabase.withQueue("demo") { queue, _ in
      let worker = try ToolProcess(
        ["worker", "--name", queue.name, "--concurrency", "2"], executable: "dpd-postgres-demo")
      #expect(
        try await TestDatabase.eventually(within: .seconds(60)) {
          worker.errors.contains("worker started")
        }, "\(worker.errors)")
      let submit = try await ToolRun.run(
        ["submit", "k", "hello", "--name", queue.name, "--delay", "0.1"],
        executable: "dpd-postgres-demo")
      #expect(submit.status == 0, "\(submit.errors)")
      #expect(submit.output == "submitted k = hello, due in 0.1 s unless submitted again\n")
      #expect(
        try await TestDatabase.eventually {
          worker.output.contains("ran k = hello (attempt 1, fence ")
        }, "\(worker.output) \(worker.errors)")
      #expect(try await queue.drains(within: .seconds(30)))
      worker.signal(SIGTERM)
      #expect(try await worker.waitForExit() == 0, "\(worker.errors)")
      #expect(worker.output.hasSuffix("stopped\n"), "\(worker.output)")
      #expect(worker.errors.contains("worker stopped"), "\(worker.errors)")
      #expect(!worker.errors.contains("hasn't been called"), "\(worker.errors)")
    }
  }
}
