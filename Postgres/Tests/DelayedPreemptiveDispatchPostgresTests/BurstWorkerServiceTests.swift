import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `PostgresBurstWorker` as a swift-service-lifecycle `Service`: graceful shutdown drains.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresBurstWorkerTests {
  static func group(_ worker: PostgresBurstWorker<String>) -> ServiceGroup {
    ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [.init(service: worker)], gracefulShutdownSignals: [], cancellationSignals: [],
        logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
  }

  @Test func gracefulShutdownLetsTheRunningHandlerFinishAndClaimsNothingNew() async throws {
    try await TestDatabase.withQueue("service") { queue, _ in
      let started = Latch()
      let finished = Latch()
      let runs = RunList()
      // One slot: "next", due while "first" runs, could be claimed only after "first" ends.
      let worker = PostgresBurstWorker(queue: queue, concurrency: 1) { run in
        runs.append(run.key, run.value)
        guard run.key == "first" else { return }
        started.open()
        // The handler sees the shutdown (it runs in the group's task tree), and then takes a
        // little longer: the worker has long been told to stop claiming when it returns.
        try await gracefulShutdown()
        try await Task.sleep(for: .milliseconds(200))
        finished.open()
      }
      let group = Self.group(worker)
      try await queue.delay("first", for: .zero, value: "a")
      let running = Task { try await group.run() }
      #expect(try await TestDatabase.eventually { started.isOpen })
      try await queue.delay("next", for: .zero, value: "b")
      await group.triggerGracefulShutdown()
      try await running.value  // returns once "first" has finished and its end is recorded
      #expect(finished.isOpen)
      #expect(runs.values("first") == ["a"])
      #expect(runs.values("next").isEmpty)
      #expect(try await queue.isPending("first") == false)
      #expect(try await queue.isPending("next"))
      #expect(try await queue.runningBursts().isEmpty)
      #expect(try await queue.cancel("next"))
    }
  }

  @Test func workerRunsDueBurstsUntilShutdown() async throws {
    try await TestDatabase.withQueue("service-runs") { queue, _ in
      let runs = RunList()
      let worker = PostgresBurstWorker(queue: queue) { run in runs.append(run.key, run.value) }
      let group = Self.group(worker)
      let running = Task { try await group.run() }
      for index in 1...5 {
        try await queue.delay("k\(index)", for: .milliseconds(20), value: "v\(index)")
      }
      #expect(try await queue.drains(within: .seconds(30)))
      await group.triggerGracefulShutdown()
      try await running.value
      for index in 1...5 { #expect(runs.values("k\(index)") == ["v\(index)"]) }
    }
  }
}
