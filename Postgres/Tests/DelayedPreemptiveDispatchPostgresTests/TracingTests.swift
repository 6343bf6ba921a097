import DelayedPreemptiveDispatch
import Foundation
import InMemoryTracing
import Instrumentation
import Logging
import MetricsTestKit
import PostgresNIO
import Testing
import Tracing

@testable import DelayedPreemptiveDispatchPostgres

/// Rule P18 against the real server, with swift-distributed-tracing's `InMemoryTracer`: a run is
/// one `.consumer` span named `"<queue> process"`, linked to the contexts of its burst's
/// submissions (the first and the newest, 128 in all), with exactly P18's attributes and never
/// a key or a value. Each test gives its queue a tracer of its own (the queue's test seam), so
/// that the tests run in parallel; `PostgresGlobalTracerTests` holds the global bootstrap.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresTracingTests {
  struct Refused: Error {}

  /// A key and a value that no span may show: they could be personal data.
  static let key = "customer-4711@example.com"
  static let value = "iban DE89 3704 0044 0532 0130 00"

  @Test func aRunIsOneConsumerSpanLinkedToEverySubmittersContext() async throws {
    let tracer = InMemoryTracer()
    let handlerSpans = Locked<[InMemorySpanContext]>([])
    let fences = Locked<[Int64]>([])
    try await Self.withTracedQueue("trace", tracer: tracer) { queue, _ in
      // Three requests, each in a span of its own, and two submissions outside any span: those
      // count, but have no context to link to. The deadline (a minute) leaves the five calls
      // time to join one burst on a loaded machine, where a burst that is due ends (T7); `flush`
      // then makes it due.
      var submitters: [InMemorySpanContext] = []
      for request in 1...3 {
        submitters.append(
          try await tracer.withSpan("request \(request)", ofKind: .server) { span in
            try await queue.delay(Self.key, for: .seconds(60), value: Self.value)
            return span.spanContext
          })
      }
      for _ in 1...2 {
        try await queue.delay(Self.key, for: .seconds(60), value: Self.value)
      }
      #expect(try await queue.flush(Self.key))
      let handler: @Sendable (PostgresBurstRun<String>) async throws -> Void = { run in
        fences.withLock { $0.append(run.fence) }
        // The run's span is current: the handler's own span is its child.
        tracer.withSpan("index") { span in handlerSpans.withLock { $0.append(span.spanContext) } }
      }
      try await Self.withWorker(queue, handler: handler) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      let runs = Self.runSpans(tracer, queue)
      try #require(runs.count == 1, "\(tracer.finishedSpans.map(\.operationName))")
      let run = runs[0]
      #expect(run.kind == .consumer)
      #expect(Self.linked(run) == submitters.map(Self.identity))
      #expect(
        run.attributes
          == Self.attributes(queue, count: 5, attempt: 1, fence: fences.withLock { $0[0] }))
      #expect(run.errors.isEmpty)
      #expect(handlerSpans.withLock { $0.map(\.parentSpanID) } == [run.spanContext.spanID])
      #expect(handlerSpans.withLock { $0.map(\.traceID) } == [run.spanContext.traceID])
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  @Test func theLinksKeepTheFirstAndTheNewest127Of200Submissions() async throws {
    let tracer = InMemoryTracer()
    try await Self.withTracedQueue("bound", tracer: tracer) { queue, client in
      var submitters: [InMemorySpanContext] = []
      for request in 1...200 {
        submitters.append(
          try await tracer.withSpan("request \(request)") { span in
            try await queue.delay(Self.key, for: .seconds(60), value: "\(Self.value) \(request)")
            return span.spanContext
          })
      }
      // What the row holds: 128 contexts, a few dozen bytes each, whatever the burst's size.
      let stored = try await Self.integers(
        client,
        """
        SELECT jsonb_array_length(traces -> 0 -> 'contexts'), octet_length(traces::text)
        FROM dpd_bursts WHERE name = \(queue.name)
        """)
      #expect(stored.first == 128, "\(stored)")
      print("PostgresTracingTests: 128 stored contexts are \(stored.last ?? 0) bytes of JSON")
      #expect(try await queue.flush(Self.key))
      try await Self.withWorker(queue, handler: { _ in }) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      let runs = Self.runSpans(tracer, queue)
      try #require(runs.count == 1)
      let expected = [submitters[0]] + submitters.suffix(127)
      #expect(Self.linked(runs[0]) == expected.map(Self.identity))
      #expect(runs[0].attributes.get("messaging.batch.message_count") == .int64(200))
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  /// A handler that throws has its error on its span; the retry is a new span with the same
  /// links and the next attempt.
  @Test func aThrowingHandlersSpanHasItsErrorAndItsRetryLinksTheSame() async throws {
    let tracer = InMemoryTracer()
    let fences = Locked<[Int64]>([])
    try await Self.withTracedQueue("throw", tracer: tracer) { queue, _ in
      let submitter = try await tracer.withSpan("request") { span in
        try await queue.delay(Self.key, for: .zero, value: Self.value)
        return span.spanContext
      }
      try await Self.withWorker(
        queue,
        handler: { run in
          fences.withLock { $0.append(run.fence) }
          if run.attempt == 1 { throw Refused() }
        }
      ) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      let runs = Self.runSpans(tracer, queue)
      try #require(runs.count == 2)
      let fence = fences.withLock { $0 }
      #expect(runs.map(Self.linked) == [[Self.identity(submitter)], [Self.identity(submitter)]])
      #expect(runs[0].attributes == Self.attributes(queue, count: 1, attempt: 1, fence: fence[0]))
      #expect(runs[1].attributes == Self.attributes(queue, count: 1, attempt: 2, fence: fence[1]))
      #expect(runs[0].errors.count == 1)
      #expect(runs[0].errors.first?.error is Refused)
      #expect(runs[0].status?.code == .error)
      #expect(runs[1].errors.isEmpty)
      #expect(runs[1].status == nil)
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  /// A run whose claim another worker takes over (its lease ran out) and the run that takes it
  /// over are two spans with the same links; the first has the cancellation as its error.
  @Test func aTakenOverRunLinksLikeTheFirst() async throws {
    let tracer = InMemoryTracer()
    let metrics = TestMetrics()
    let firstStarted = Latch()
    // A lease of 5 s: with 1 s, a loaded machine's claim was answered after its lease had run
    // out, so attempt 1 never started (a late claim is not run) and the test waited for it.
    try await Self.withTracedQueue("takeover", tracer: tracer, lease: .seconds(5), metrics: metrics)
    { queue, client in
      var submitters: [InMemorySpanContext] = []
      for request in 1...2 {
        submitters.append(
          try await tracer.withSpan("request \(request)") { span in
            // Not due for a minute: the second submission joins the first's burst (T7) on a
            // loaded machine too (with 2 s, a slow call made them two bursts); `flush` then
            // makes it due.
            try await queue.delay(Self.key, for: .seconds(60), value: Self.value)
            return span.spanContext
          })
      }
      #expect(try await queue.flush(Self.key))
      try await Self.withWorker(
        queue,
        handler: { run in
          guard run.attempt == 1 else { return }
          firstStarted.open()
          try await Task.sleep(for: .seconds(60))
        }
      ) { () async throws in
        #expect(try await TestDatabase.eventually(within: .seconds(30)) { firstStarted.isOpen })
        // Another claim replaces this run's, and its lease is over: the next claim takes it
        // over, and the next renewal finds the first run's claim gone.
        try await client.query(
          """
          UPDATE dpd_bursts SET claim = gen_random_uuid(), due_at = clock_timestamp()
          WHERE name = \(queue.name)
          """)
        #expect(try await queue.drains(within: .seconds(30)))
        #expect(
          try await TestDatabase.eventually(within: .seconds(30)) {
            Self.runSpans(tracer, queue).count == 2
          })
      }
      #expect(
        try metrics.expectCounter("dpd.postgres.takeovers", [("queue", queue.name)]).totalValue == 1
      )
      let runs = Self.runSpans(tracer, queue).sorted { Self.attempt($0) < Self.attempt($1) }
      try #require(runs.count == 2)
      #expect(runs.map(Self.attempt) == [1, 2])
      #expect(Self.linked(runs[0]) == submitters.map(Self.identity))
      #expect(Self.linked(runs[1]) == submitters.map(Self.identity))
      #expect(
        runs.map { $0.attributes.get("messaging.batch.message_count") } == [.int64(2), .int64(2)])
      #expect(runs[0].errors.first?.error is CancellationError)
      #expect(runs[1].errors.isEmpty)
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  /// Concurrent submissions are written in batches that mix submissions with a context and
  /// without: each key's run links to its own traced submitters and counts all of its
  /// submissions.
  @Test func batchesMixingSubmissionsWithAndWithoutAContextStoreEachOne() async throws {
    let tracer = InMemoryTracer()
    try await Self.withTracedQueue("batches", tracer: tracer) { queue, _ in
      let keys = (1...4).map { "\(Self.key)-\($0)" }
      let submitters = try await withThrowingTaskGroup(
        of: (String, InMemorySpanContext?).self
      ) { group in
        for index in 0..<40 {
          let key = keys[index % 4]
          group.addTask {
            guard index % 8 < 4 else {
              try await queue.delay(key, for: .seconds(60), value: Self.value)
              return (key, nil)
            }
            return try await tracer.withSpan("request \(index)") { span in
              try await queue.delay(key, for: .seconds(60), value: Self.value)
              return (key, span.spanContext)
            }
          }
        }
        return try await group.reduce(into: [String: Set<String>]()) { submitters, submitted in
          submitters[submitted.0, default: []].formUnion(
            submitted.1.map { [Self.identity($0)] } ?? [])
        }
      }
      for key in keys { #expect(try await queue.flush(key)) }
      try await Self.withWorker(queue, handler: { _ in }) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
        #expect(try await TestDatabase.eventually { Self.runSpans(tracer, queue).count == 4 })
      }
      let runs = Self.runSpans(tracer, queue)
      #expect(
        runs.map { $0.attributes.get("messaging.batch.message_count") }
          == Array(repeating: .int64(10), count: 4))
      #expect(Set(runs.map { Set(Self.linked($0)) }) == Set(keys.map { submitters[$0] ?? [] }))
      #expect(keys.allSatisfy { submitters[$0]?.count == 5 })
    }
  }

  /// A value that does not decode fails its run, and the span records that without the key and
  /// the decoder's message, which the queue's own error carries.
  @Test func aValueThatDoesNotDecodeIsRecordedWithoutTheKey() async throws {
    let tracer = InMemoryTracer()
    try await Self.withTracedQueue("undecodable", tracer: tracer) { queue, client in
      let numbers = PostgresDelayedPreemptiveQueue<Int>(client: client, name: queue.name)
      try await tracer.withSpan("request") { _ in
        try await numbers.delay(Self.key, for: .zero, value: 4711)
      }
      try await Self.withWorker(queue, handler: { _ in }) { () async throws in
        #expect(try await TestDatabase.eventually { !Self.runSpans(tracer, queue).isEmpty })
      }
      let run = try #require(Self.runSpans(tracer, queue).first)
      #expect(run.errors.map { "\($0.error)" } == ["\(RunSpan.ValueNotDecodable())"])
      #expect(run.status?.code == .error)
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  /// A row that holds several bursts of its key: each burst's run links to its own submissions
  /// and counts them. Three bursts after `maxSubmissions: 4` (4, 4 and 2 submissions), then a
  /// burst submitted during a run, which runs after it. The submissions' delay is a minute, so
  /// that a loaded machine cannot end a burst between two of them (a burst that is due ends,
  /// T7); `flush` makes the last burst of each group due instead of the delay.
  @Test func eachBurstOfARowLinksToItsOwnSubmissions() async throws {
    let tracer = InMemoryTracer()
    let release = Latch()
    let started = Locked(0)
    try await Self.withTracedQueue(
      "bursts", tracer: tracer, options: DelayOptions(maxSubmissions: 4)
    ) { queue, _ in
      var submitters: [InMemorySpanContext] = []
      func submit(_ count: Int) async throws {
        for _ in 1...count {
          submitters.append(
            try await tracer.withSpan("request \(submitters.count + 1)") { span in
              try await queue.delay(Self.key, for: .seconds(60), value: Self.value)
              return span.spanContext
            })
        }
      }
      try await submit(10)
      #expect(try await queue.flush(Self.key))
      try await Self.withWorker(
        queue,
        handler: { _ in
          // The third run waits, so that two submissions arrive during it and start a burst
          // behind it.
          let run = started.withLock { count in
            count += 1
            return count
          }
          if run == 3 { try await release.wait() }
        }
      ) { () async throws in
        #expect(try await TestDatabase.eventually { started.withLock { $0 } == 3 })
        try await submit(2)
        #expect(try await queue.flush(Self.key))
        release.open()
        #expect(try await queue.drains(within: .seconds(30)))
        #expect(try await TestDatabase.eventually { Self.runSpans(tracer, queue).count == 4 })
      }
      let runs = Self.runSpans(tracer, queue).sorted { Self.fence($0) < Self.fence($1) }
      try #require(runs.count == 4)
      let bursts = [0..<4, 4..<8, 8..<10, 10..<12].map { submitters[$0].map(Self.identity) }
      #expect(runs.map(Self.linked) == bursts)
      #expect(
        runs.map { $0.attributes.get("messaging.batch.message_count") }
          == [.int64(4), .int64(4), .int64(2), .int64(2)])
    }
  }

  /// `cancel` during a run drops the burst behind it; when the run then throws, its retry counts
  /// and links the run's own submissions (not the dropped burst's), and a submission during the
  /// retry's backoff starts a burst of its own behind it (P17), which counts and links its own.
  @Test func aRetriedHeadAfterACancelCountsAndLinksItsOwnSubmissions() async throws {
    let tracer = InMemoryTracer()
    let release = Latch()
    let firstStarted = Latch()
    let thrown = Locked(false)
    try await Self.withTracedQueue("cancel", tracer: tracer, retryBackoff: .seconds(3)) {
      queue, client in
      @Sendable func submit(_ name: String) async throws -> InMemorySpanContext {
        try await tracer.withSpan(name) { span in
          try await queue.delay(Self.key, for: .zero, value: Self.value)
          return span.spanContext
        }
      }
      let first = try await submit("first")
      try await Self.withWorker(
        queue,
        handler: { run in
          guard run.attempt == 1, !thrown.withLock({ $0 }) else { return }
          firstStarted.open()
          try await release.wait()
          thrown.withLock { $0 = true }
          throw Refused()
        }
      ) { () async throws in
        #expect(try await TestDatabase.eventually { firstStarted.isOpen })
        _ = try await submit("dropped 1")
        _ = try await submit("dropped 2")
        #expect(try await queue.cancel(Self.key))
        release.open()
        // The run threw and waits for its retry (three seconds): a submission now starts a
        // burst behind it.
        #expect(
          try await TestDatabase.eventually {
            try await Self.integers(
              client,
              """
              SELECT count(*), count(*) FILTER (WHERE claim IS NULL) FROM dpd_bursts
              WHERE name = \(queue.name)
              """) == [1, 1]
          })
        let joined = try await submit("joined")
        #expect(try await queue.drains(within: .seconds(30)))
        #expect(
          try await TestDatabase.eventually(within: .seconds(30)) {
            Self.runSpans(tracer, queue).count == 3
          })
        // In the order they ran (runs of one key never overlap).
        let runs = Self.runSpans(tracer, queue)
        try #require(runs.count == 3)
        #expect(runs.map(Self.attempt) == [1, 2, 1])
        #expect(
          runs.map(Self.linked) == [[first], [first], [joined]].map { $0.map(Self.identity) })
        #expect(
          runs.map { $0.attributes.get("messaging.batch.message_count") }
            == [.int64(1), .int64(1), .int64(1)])
      }
    }
  }

  /// With the `NoOpTracer` (no tracer bootstrapped), a submission stores nothing of its own, also
  /// in a task with a current context, and a burst behind another stores only its count.
  @Test func withoutATracerNothingIsStoredPerSubmission() async throws {
    let tracer = InMemoryTracer()
    let release = Latch()
    let started = Latch()
    try await Self.withTracedQueue("noop", tracer: NoOpTracer()) { queue, client in
      try await tracer.withSpan("request") { _ in
        for index in 1...50 {
          try await queue.delay("waiting", for: .seconds(60), value: "\(index)")
        }
        try await queue.delay("running", for: .zero, value: "0")
      }
      #expect(try await Self.traces(client, queue) == ["running": "[]", "waiting": "[]"])
      try await Self.withWorker(
        queue,
        handler: { run in
          guard run.key == "running" else { return }
          started.open()
          try await release.wait()
        }
      ) { () async throws in
        #expect(try await TestDatabase.eventually { started.isOpen })
        try await tracer.withSpan("request") { _ in
          for index in 1...50 {
            try await queue.delay("running", for: .seconds(60), value: "\(index)")
          }
        }
        #expect(
          try await Self.traces(client, queue) == ["running": #"[{"count": 1}]"#, "waiting": "[]"])
        release.open()
        try await queue.cancel("waiting")
        #expect(try await queue.flush("running"))
        #expect(try await queue.drains(within: .seconds(30)))
      }
      #expect(tracer.performedContextInjections.isEmpty)
    }
  }

  /// Under `minimumSpacing` a key's row is kept `idle` after its run, only to remember when the
  /// run started: it holds no trace record, and a submission during the spacing starts a fresh
  /// burst whose run links to that submission alone, never to the earlier run's submitters.
  @Test func aSubmissionDuringTheSpacingLinksOnlyToItsOwnBurst() async throws {
    let tracer = InMemoryTracer()
    let spacing = Duration.seconds(5)
    try await Self.withTracedQueue(
      "spaced", tracer: tracer, options: DelayOptions(minimumSpacing: spacing)
    ) { queue, client in
      let first = try await tracer.withSpan("request 1") { span in
        try await queue.delay(Self.key, for: .zero, value: Self.value)
        return span.spanContext
      }
      try await Self.withWorker(queue, handler: { _ in }) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
        // The run ended within the spacing: the row is kept idle, with no trace record.
        let idle = try await Self.integers(
          client,
          """
          SELECT idle::int, jsonb_array_length(traces) FROM dpd_bursts
          WHERE name = \(queue.name)
          """)
        #expect(idle == [1, 0], "\(idle)")
        let second = try await tracer.withSpan("request 2") { span in
          try await queue.delay(Self.key, for: .zero, value: Self.value)
          return span.spanContext
        }
        #expect(try await Self.traces(client, queue)[Self.key]?.contains("contexts") == true)
        #expect(
          try await TestDatabase.eventually(within: .seconds(30)) {
            Self.runSpans(tracer, queue).count == 2
          })
        let runs = Self.runSpans(tracer, queue)
        #expect(runs.map(Self.linked) == [[Self.identity(first)], [Self.identity(second)]])
        #expect(
          runs.map { $0.attributes.get("messaging.batch.message_count") } == [.int64(1), .int64(1)])
      }
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  /// A submission in the caller's transaction (`delay(on:)`) stores the caller's context as
  /// `delay` does, and a SQL caller passes one to `dpd_delay` as `trace_context`: the run links
  /// to both.
  @Test func submissionsOnAConnectionAndFromSQLAreLinked() async throws {
    let tracer = InMemoryTracer()
    try await Self.withTracedQueue("trace-tx", tracer: tracer) { queue, client in
      let inTransaction = try await tracer.withSpan("request in a transaction") { span in
        try await client.withTransaction(logger: Logger(label: "test")) { connection in
          try await queue.delay(Self.key, for: .seconds(60), value: Self.value, on: connection)
        }
        return span.spanContext
      }
      let fromSQL = try await tracer.withSpan("a SQL caller") { span in
        let carrier = TraceCarrier.json(injecting: ServiceContext.current, with: tracer)
        #expect(!carrier.isEmpty)
        try await PostgresSQLFunctionTests.sql(
          client,
          """
          SELECT dpd_delay(\(queue.name), \(Self.key), '60 s', to_jsonb(\(Self.value)::text),
            trace_context => \(carrier)::jsonb)
          """)
        return span.spanContext
      }
      #expect(try await queue.flush(Self.key))
      try await Self.withWorker(queue, handler: { _ in }) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
      }
      let runs = Self.runSpans(tracer, queue)
      try #require(runs.count == 1)
      #expect(Self.linked(runs[0]) == [Self.identity(inTransaction), Self.identity(fromSQL)])
      #expect(runs[0].attributes.get("messaging.batch.message_count") == .int64(2))
      Self.expectNoKeyOrValue(in: tracer)
    }
  }

  // MARK: - Helpers

  /// A migrated queue of `String` values with a fresh name that traces with `tracer`.
  static func withTracedQueue(
    _ prefix: String, tracer: any Tracer, options: DelayOptions = DelayOptions(),
    lease: Duration = .seconds(30), retryBackoff: Duration = .milliseconds(20),
    metrics: TestMetrics = TestMetrics(),
    _ body: @Sendable (PostgresDelayedPreemptiveQueue<String>, PostgresClient) async throws -> Void
  ) async throws {
    try await TestDatabase.withClient { client, configuration in
      var queue = PostgresDelayedPreemptiveQueue<String>(
        client: client, configuration: configuration, name: TestDatabase.uniqueName(prefix),
        options: options, lease: lease, metricsFactory: metrics)
      queue.safetyPoll = .milliseconds(200)
      queue.retryBackoff = retryBackoff
      queue.tracer = tracer
      try await queue.migrate()
      try await body(queue, client)
    }
  }

  /// Runs a worker with `handler` while `body` runs, then cancels it and waits for it.
  static func withWorker(
    _ queue: PostgresDelayedPreemptiveQueue<String>,
    handler: @escaping @Sendable (PostgresBurstRun<String>) async throws -> Void,
    _ body: () async throws -> Void
  ) async throws {
    try await TestDatabase.whileWorking({ try await queue.run(handler: handler) }, body)
  }

  static func runSpans(_ tracer: InMemoryTracer, _ queue: PostgresDelayedPreemptiveQueue<String>)
    -> [FinishedInMemorySpan]
  {
    tracer.finishedSpans.filter { $0.operationName == "\(queue.name) process" }
  }

  /// A span context as a link carries it: its trace and its span.
  static func identity(_ context: InMemorySpanContext) -> String {
    "\(context.traceID)/\(context.spanID)"
  }

  static func linked(_ span: FinishedInMemorySpan) -> [String] {
    span.links.map { $0.context.inMemorySpanContext.map(identity) ?? "(none)" }
  }

  static func attempt(_ span: FinishedInMemorySpan) -> Int64 {
    if case .int64(let attempt)? = span.attributes.get("dpd.attempt") { return attempt }
    return -1
  }

  static func fence(_ span: FinishedInMemorySpan) -> Int64 {
    if case .int64(let fence)? = span.attributes.get("dpd.fence") { return fence }
    return -1
  }

  /// P18's attributes, and no others.
  static func attributes(
    _ queue: PostgresDelayedPreemptiveQueue<String>, count: Int, attempt: Int, fence: Int64
  ) -> SpanAttributes {
    [
      "messaging.system": .string("dpd.postgres"),
      "messaging.destination.name": .string(queue.name),
      "messaging.operation.type": .string("process"),
      "messaging.batch.message_count": .int64(Int64(count)),
      "dpd.attempt": .int64(Int64(attempt)),
      "dpd.fence": .int64(fence),
    ]
  }

  /// No span's name or attribute holds the key or the value, or a part of them. The attributes
  /// are read as their whole description, names and values: `SpanAttributes` is no sequence.
  /// The parts of the value are looked for with their spaces: a fence (a number from a sequence
  /// that every test of the database advances) may well contain "0532".
  static func expectNoKeyOrValue(in tracer: InMemoryTracer) {
    let secrets = ["customer-4711", "example.com", "DE89", "0044 0532"]
    for span in tracer.finishedSpans {
      if !span.attributes.isEmpty {
        // The description holds the values, not only the names.
        #expect("\(span.attributes)".contains("dpd.postgres"))
      }
      for text in [span.operationName, "\(span.attributes)"] + span.errors.map({ "\($0.error)" }) {
        #expect(!secrets.contains { text.contains($0) }, "\(text)")
      }
    }
  }

  /// Each key's `traces` as PostgreSQL prints it.
  static func traces(_ client: PostgresClient, _ queue: PostgresDelayedPreemptiveQueue<String>)
    async throws -> [String: String]
  {
    var traces: [String: String] = [:]
    let rows = try await client.query(
      "SELECT key, traces::text FROM dpd_bursts WHERE name = \(queue.name)")
    for try await (key, text) in rows.decode((String, String).self) { traces[key] = text }
    return traces
  }

  static func integers(_ client: PostgresClient, _ query: PostgresQuery) async throws -> [Int] {
    for try await (first, second) in try await client.query(query).decode((Int, Int).self) {
      return [first, second]
    }
    return []
  }
}

/// P18's default: a queue given no tracer traces through the tracer bootstrapped in
/// `InstrumentationSystem`. The only bootstrap of the test process (a second one would stop it):
/// every other test gives its queue a tracer of its own, so none depends on it.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresGlobalTracerTests {
  static let tracer: InMemoryTracer = {
    let tracer = InMemoryTracer()
    InstrumentationSystem.bootstrap(tracer)
    return tracer
  }()

  @Test func aQueueWithoutATracerOfItsOwnTracesThroughTheBootstrappedOne() async throws {
    let tracer = Self.tracer
    try await TestDatabase.withQueue("global") { queue, _ in
      #expect(queue.tracer == nil)
      let submitter = try await tracer.withSpan("request") { span in
        try await queue.delay("document-42", for: .zero, value: "edit")
        return span.spanContext
      }
      try await queue.withWorker(handler: { _, _ in }) { () async throws in
        #expect(try await queue.drains(within: .seconds(30)))
        #expect(
          try await TestDatabase.eventually {
            PostgresTracingTests.runSpans(tracer, queue).count == 1
          })
      }
      let runs = PostgresTracingTests.runSpans(tracer, queue)
      #expect(runs.map(\.kind) == [.consumer])
      #expect(runs.map(PostgresTracingTests.linked) == [[PostgresTracingTests.identity(submitter)]])
    }
  }
}

/// What `delay` stores of a context, without a database.
@Suite struct TraceCarrierTests {
  @Test func aContextIsStoredAsTheTracersFieldsAndLinkedBackByItsExtract() throws {
    let tracer = InMemoryTracer()
    let (json, context) = tracer.withSpan("request") { span in
      (TraceCarrier.json(injecting: span.context, with: tracer), span.spanContext)
    }
    #expect(json == #"{"in-memory-span-id":"span-1","in-memory-trace-id":"trace-1"}"#)
    let links = TraceCarrier.links(fromJSONArray: "[\(json), \(json)]", with: tracer)
    #expect(
      links.map { $0.context.inMemorySpanContext }
        == [context, context].map {
          InMemorySpanContext(traceID: $0.traceID, spanID: $0.spanID, parentSpanID: nil)
        })
  }

  @Test func nothingIsStoredWithoutAContextOrATracerThatInjects() {
    let tracer = InMemoryTracer()
    #expect(TraceCarrier.json(injecting: nil, with: tracer) == "")
    #expect(TraceCarrier.json(injecting: .topLevel, with: tracer) == "")
    tracer.withSpan("request") { span in
      #expect(TraceCarrier.json(injecting: span.context, with: NoOpTracer()) == "")
    }
  }

  /// PostgreSQL's `jsonb` refuses a NUL character, which would fail the caller's `delay`; and a
  /// carrier over 1,024 bytes would make every submission costly.
  @Test func aCarrierWithANulOrOverTheBoundIsNotStored() {
    for traceID in ["trace\0", String(repeating: "t", count: TraceCarrier.maximumBytes)] {
      let tracer = InMemoryTracer(
        idGenerator: .init(nextTraceID: { traceID }, nextSpanID: { "span" }))
      tracer.withSpan("request") { span in
        #expect(TraceCarrier.json(injecting: span.context, with: tracer) == "")
      }
    }
  }

  @Test func storedContextsThatDoNotParseOrExtractGiveNoLinks() {
    let tracer = InMemoryTracer()
    #expect(TraceCarrier.links(fromJSONArray: "not json", with: tracer).isEmpty)
    #expect(
      TraceCarrier.links(fromJSONArray: #"[{"traceparent": "00-ab-cd-01"}]"#, with: tracer).isEmpty)
  }
}
