import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchModel
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// One specification, two engines: the PostgreSQL store is driven through the random sequences
/// that check the in-process driver (`KeyedModelSequence`, the same seeds), at a database time
/// the test sets (`dpd.now`), and checked after every step against the same reference model
/// (`KeyedReferenceModel`). The store's statements are those the queue and its workers send:
/// `dpd_submit` (one submission, or a batch), `dpd_cancel`, `dpd_flush`, the claim and the end
/// of a run. A worker that is on time is the model's timer: `advance` moves the database's
/// clock to each due instant on the way, claims what is due and ends those runs. `hold` moves
/// the clock with the worker late: nothing is claimed until the next step, which the worker
/// and the model's late timers both catch up after, at its instant; a submission in that step
/// must not join a burst that is due (T7).
///
/// After every step the store must agree with the model on what runs (each key's runs, with
/// their values and the database instant of their claim), and on what waits: the keys with a
/// pending burst, each due at the instant the model computes.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresStoreModelTests {
  static let logger = Logger(label: "test")

  /// Sequences at once, each on a connection of its own.
  static let lanes = 4

  @Test func storeMatchesTheReferenceModelOnRandomSequences() async throws {
    try await TestDatabase.withQueue("model") { queue, client in
      let outcome = try await Self.run(
        client: client, name: queue.name,
        indices: Array(0..<KeyedModelSequence.storeSequenceCount))
      #expect(outcome.failures.isEmpty, "\(outcome.failures.joined(separator: "\n"))")
      print(
        "PostgresStoreModelTests: \(outcome.sequences) sequences, \(outcome.steps) steps checked")
      #expect(outcome.sequences == KeyedModelSequence.storeSequenceCount)
      #expect(
        outcome.steps == KeyedModelSequence.storeSequenceCount * KeyedModelSequence.storeSteps)
    }
  }

  /// The disagreement that the random sequences found last: sequence 125 cancels, and sequence
  /// 133 flushes, a burst closed by `maxSubmissions` that waits for the spacing. In-process
  /// (and in the model) a closed burst is a decided run: `cancel` leaves it, and `flush` runs the
  /// pending burst behind it after it. The store of schema version 7 could not tell it from a
  /// pending burst: its `cancel` dropped it, and its `flush` ran it at once, before the spacing
  /// allowed. Version 8 seals it (`sealed`, see `Schema`).
  @Test func theStoreLeavesAClosedBurstThatWaitsForTheSpacingToCancelAndFlush() async throws {
    try await TestDatabase.withQueue("closed") { queue, client in
      let outcome = try await Self.run(client: client, name: queue.name, indices: [125, 133])
      #expect(outcome.failures.isEmpty, "\(outcome.failures)")
      #expect(outcome.steps == 2 * KeyedModelSequence.storeSteps)
    }
  }

  /// T7 in the store: a submission to a burst that is due, which no worker has claimed yet,
  /// ends it: the due burst runs with its own value, and the submission starts the next burst.
  /// (Before, the submission joined it and moved its deadline, so what ran depended on how late
  /// the worker was; the model test found it.)
  @Test func aSubmissionToADueBurstThatNoWorkerClaimedStartsTheNextOne() async throws {
    try await TestDatabase.withQueue("due") { queue, client in
      try await client.withConnection { connection in
        var store = StoreHarness(
          connection: connection, name: queue.name, seed: 0, options: DelayOptions())
        try await store.setNow(0)
        try await store.submit([.init(key: 0, milliseconds: 100, value: "a")])
        try await store.setNow(250)  // due at 100; the worker is late
        try await store.submit([.init(key: 0, milliseconds: 100, value: "b")])
        try await store.advance(to: 250)
        try await store.advance(to: 400)
        #expect(store.runs[0].map(\.work) == ["a", "b"])
        #expect(store.runs[0].map(\.at) == [250, 350])
      }
    }
  }

  /// A burst closed by `maxSubmissions` (T2) is a decided run, which waits for the spacing:
  /// `cancel` drops only the pending burst behind it, and `flush` seals the pending burst, which
  /// runs after it, the spacing from its start included (the store's spacing counts from a
  /// run's start). Each step is checked against the model too.
  @Test func cancelAndFlushLeaveABurstClosedByMaxSubmissions() async throws {
    try await TestDatabase.withQueue("sealed") { queue, client in
      try await client.withConnection { connection in
        var store = StoreHarness(
          connection: connection, name: queue.name, seed: 0,
          options: DelayOptions(maxSubmissions: 2, minimumSpacing: .milliseconds(100)))
        try await store.setNow(0)
        func step(_ operation: ModelOperation) async throws {
          let disagreement = try await store.step(operation)
          #expect(disagreement == nil, "\(operation): \(disagreement ?? "")")
        }
        try await step(.delay(key: 0, milliseconds: 0, value: "a"))  // runs at 0
        try await step(.hold(milliseconds: 10))
        try await step(.delay(key: 0, milliseconds: 50, value: "b"))
        try await step(.delay(key: 0, milliseconds: 50, value: "c"))  // closed, due at 100
        try await step(.delay(key: 0, milliseconds: 50, value: "d"))  // pending behind it
        #expect(store.due[0]?.at == 100)
        try await step(.cancel(key: 0))
        #expect(store.answered == true, "the pending burst is dropped")
        #expect(store.due[0]?.at == 100)
        try await step(.cancel(key: 0))
        #expect(store.answered == false, "a closed burst alone is not pending")
        try await step(.flush(key: 0))
        #expect(store.answered == false)
        try await step(.delay(key: 0, milliseconds: 50, value: "e"))  // pending behind it
        try await step(.flush(key: 0))
        #expect(store.answered == true)
        #expect(store.due[0]?.at == 100, "the closed burst keeps its due instant")
        try await step(.delay(key: 0, milliseconds: 0, value: "f"))  // starts behind "e"
        try await step(.advance(milliseconds: 400))
        #expect(store.runs[0] == store.model[0].runs)
        #expect(store.runs[0].map(\.work) == ["a", "c", "e", "f"])
        #expect(store.runs[0].map(\.at) == [0, 100, 200, 300])
      }
    }
  }

  /// The test can fail: a store whose `dpd_submit` ignores `maxWait` when a submission joins a
  /// burst disagrees with the model within the first sequences.
  @Test func aStoreThatIgnoresMaxWaitDisagrees() async throws {
    try await TestDatabase.withFreshDatabase { url in
      try await TestDatabase.withQueue("broken", url: url) { queue, client in
        let installation = DatabaseFunctions.installation
        let bound = "b.first_submitted + $6 * interval '1 millisecond'"
        #expect(installation.contains(bound))
        // `dpd_submit`'s statement alone, with the bound of a joined burst's deadline gone.
        let submit = try #require(
          installation.range(of: "CREATE OR REPLACE FUNCTION dpd_submit")?.lowerBound)
        let end = try #require(installation.range(of: "$dpd_submit$;")?.upperBound)
        let broken = installation[submit..<end].replacingOccurrences(
          of: bound, with: "'infinity'::timestamptz")
        try await client.query(PostgresQuery(unsafeSQL: broken), logger: Self.logger)
        let outcome = try await Self.run(
          client: client, name: queue.name, indices: Array(0..<100), stopAfter: 1)
        #expect(outcome.failures.count == 1)
        // Found where `maxWait` is set: the same sequences pass on the store as shipped.
        #expect(
          outcome.failures.first?.contains("maxWait: Optional") == true, "\(outcome.failures)")
      }
    }
  }

  /// What a run of sequences found.
  struct Outcome: Sendable {
    var failures: [String] = []
    var sequences = 0
    var steps = 0
  }

  /// Runs the sequences of `indices` in ``lanes`` lanes; returns the disagreements found, each
  /// with its seed, at most `stopAfter` of them.
  static func run(
    client: PostgresClient, name: String, indices: [Int], stopAfter: Int = 3
  ) async throws -> Outcome {
    try await withThrowingTaskGroup(of: Outcome.self) { group in
      for lane in 0..<lanes {
        group.addTask {
          try await client.withConnection { connection in
            var outcome = Outcome()
            for index in indices where index % lanes == lane {
              let seed = KeyedModelSequence.storeSeed(index)
              var store = StoreHarness(
                connection: connection, name: "\(name)-\(lane)", seed: seed)
              let failure = try await store.run()
              outcome.sequences += 1
              outcome.steps += store.stepsChecked
              if let failure {
                outcome.failures.append("sequence \(index): \(failure)")
                if outcome.failures.count >= stopAfter { break }
              }
            }
            return outcome
          }
        }
      }
      var total = Outcome()
      for try await lane in group {
        total.failures += lane.failures
        total.sequences += lane.sequences
        total.steps += lane.steps
      }
      total.failures = Array(total.failures.prefix(stopAfter))
      return total
    }
  }
}

/// The store under one random sequence: the statements the queue and a worker send, at the
/// database time the sequence is at, and the reference model beside it.
struct StoreHarness {
  static let logger = Logger(label: "test")
  /// The database's instant 0 of the model's time line.
  static let origin = "'2030-01-01 00:00:00+00'::timestamptz"
  /// ``origin`` in Unix seconds.
  static let originSeconds = 1_893_456_000.0

  let connection: PostgresConnection
  let name: String
  var sequence: KeyedModelSequence
  var model: KeyedReferenceModel
  /// Each key's runs as the store claimed them.
  var runs: [[ReferenceModel.Run]]
  var now: Int64 = 0
  /// The instant each key's waiting burst is due, and whether a run of it is claimed, as the
  /// store said after the last step.
  var due: [Int: (at: Int64, claimed: Bool)] = [:]

  /// The steps applied and checked.
  private(set) var stepsChecked = 0
  /// What the store answered to the last `cancel` or `flush` of one key: whether it had a
  /// pending burst.
  private(set) var answered: Bool?

  /// The options and merge of the sequence, or `options` and `merge` (`.replace` unless given)
  /// for a test that drives the store by hand.
  let options: DelayOptions
  let merge: ReferenceModel.Merge

  init(
    connection: PostgresConnection, name: String, seed: UInt64, options: DelayOptions? = nil,
    merge: ReferenceModel.Merge? = nil
  ) {
    self.connection = connection
    self.name = name
    sequence = KeyedModelSequence(seed: seed, engine: .store, keyCount: 8)
    self.options = options ?? sequence.options
    self.merge = merge ?? (options == nil ? sequence.merge : .replace)
    // The store's spacing counts from a run's start, which is later than its due instant
    // when the worker is late (`hold`).
    model = KeyedReferenceModel(
      keyCount: sequence.keyCount, options: self.options, merge: self.merge, spacingOrigin: .start)
    runs = Array(repeating: [], count: sequence.keyCount)
  }

  var spacing: Double { Double(model[0].spacing ?? 0) }

  /// Runs the sequence; returns the first disagreement, or nil.
  mutating func run() async throws -> String? {
    try await connection.query(
      "DELETE FROM dpd_bursts WHERE name = \(name)", logger: Self.logger)
    try await setNow(0)
    for index in 0..<KeyedModelSequence.storeSteps {
      let operation = sequence.next()
      if let disagreement = try await step(operation) {
        return
          "seed \(sequence.seed), step \(index) \(operation): \(disagreement); options \(options), "
          + "merge \(merge)"
      }
    }
    return nil
  }

  /// Applies `operation` to the store and to the model; returns where they disagree after it,
  /// or nil.
  mutating func step(_ operation: ModelOperation) async throws -> String? {
    var disagreement: String?
    do {
      try await apply(operation)
    } catch let error as Disagreement {
      disagreement = error.description
    }
    model.apply(operation)
    // The worker, late through a `hold`, catches up after the next step: it claims what is
    // due then. The model's timers fire then too, so that both run those bursts at that
    // instant; a submission to a due burst meanwhile meets T7 in both.
    if case .hold = operation {} else { model.apply(.advance(milliseconds: 0)) }
    if disagreement == nil { disagreement = check() }
    stepsChecked += 1
    return disagreement
  }

  mutating func apply(_ operation: ModelOperation) async throws {
    switch operation {
    case .delay(let key, let milliseconds, let value):
      try await submit([.init(key: key, milliseconds: milliseconds, value: value)])
    case .batch(let submissions):
      try await submit(submissions)
    case .cancel(let key): answered = try await cancel(key)
    case .flush(let key): answered = try await flush(key)
    case .cancelAll: for key in 0..<sequence.keyCount { try await cancel(key) }
    case .flushAll: for key in 0..<sequence.keyCount { try await flush(key) }
    case .hold(let milliseconds):
      try await setNow(now + max(milliseconds, 0))
      due = try await readDue()
      return
    case .advance(let milliseconds):
      try await advance(to: now + max(milliseconds, 0))
      return
    }
    // The worker is on time: what the step made due runs at once (T5).
    try await advance(to: now)
  }

  static func key(_ index: Int) -> String { "k\(index)" }

  func json(_ value: String) -> String {
    merge == .append ? "[\"\(value)\"]" : "\"\(value)\""
  }

  func submit(_ submissions: [ModelOperation.Submission]) async throws {
    let statement = DelayStatement(
      name: name,
      submissions: submissions.map {
        .init(
          key: Self.key($0.key), json: json($0.value), delayMilliseconds: Double($0.milliseconds))
      },
      restart: options.deadlinePolicy == .restart,
      maxWaitMilliseconds: model[0].maxWait.map(Double.init),
      maxSubmissions: options.maxSubmissions, append: merge == .append,
      minimumSpacingMilliseconds: spacing)
    _ = try await connection.rows(statement, logger: Self.logger)
  }

  /// Returns whether the store dropped a pending burst.
  @discardableResult
  func cancel(_ key: Int) async throws -> Bool {
    try await connection.rows(
      CancelStatement(name: name, key: Self.key(key), minimumSpacingMilliseconds: spacing),
      logger: Self.logger
    ).first ?? false
  }

  /// Returns whether the store had a pending burst to flush.
  @discardableResult
  func flush(_ key: Int) async throws -> Bool {
    try await connection.rows(
      FlushStatement(name: name, key: Self.key(key)), logger: Self.logger
    ).first ?? false
  }

  mutating func setNow(_ instant: Int64) async throws {
    try await connection.query(
      PostgresQuery(
        unsafeSQL: """
          SELECT set_config('dpd.now',
            (\(Self.origin) + \(instant) * interval '1 millisecond')::text, false)
          """), logger: Self.logger)
    now = instant
  }

  /// A worker on time: at each due instant up to `target`, it claims what is due and ends
  /// those runs at once. Leaves ``due`` as the store says after the last of them.
  mutating func advance(to target: Int64) async throws {
    while true {
      due = try await readDue()
      guard let earliest = due.values.filter({ !$0.claimed }).map(\.at).min(), earliest <= target
      else { break }
      if earliest > now { try await setNow(earliest) }
      let claims = try await connection.rows(
        ClaimStatement(
          name: name, limit: 100, owner: "model", leaseMilliseconds: 600_000, maxAttempts: 5,
          minimumSpacingMilliseconds: spacing), logger: Self.logger)
      guard !claims.isEmpty else {
        throw Disagreement(description: "a burst due at \(earliest) was not claimed at \(now)")
      }
      for claim in claims {
        runs[Int(claim.key.dropFirst())!].append(.init(work: try work(claim.json), at: now))
      }
      let ended = try await connection.rows(
        SucceededStatement(
          name: name, keys: claims.map(\.key), claims: claims.map(\.claim),
          minimumSpacingMilliseconds: spacing,
          millisecondsSinceHandlerStarts: claims.map { _ in 0 }), logger: Self.logger)
      guard ended.count == claims.count else {
        throw Disagreement(description: "ended \(ended.count) of \(claims.count) runs at \(now)")
      }
    }
    if target > now { try await setNow(target) }
  }

  struct Disagreement: Error, CustomStringConvertible {
    var description: String
  }

  /// The model's name for a run's value: the string, or the appended strings joined with "+".
  func work(_ json: String) throws -> String {
    let data = Data(json.utf8)
    if merge == .append {
      return try JSONDecoder().decode([String].self, from: data).joined(separator: "+")
    }
    return try JSONDecoder().decode(String.self, from: data)
  }

  /// Each key's burst that holds work (not a row kept only for the spacing): the instant its
  /// head is due, and whether it is claimed.
  func readDue() async throws -> [Int: (at: Int64, claimed: Bool)] {
    let query: PostgresQuery = """
      SELECT key, (extract(epoch FROM due_at - '2030-01-01 00:00:00+00'::timestamptz)
        * 1000)::float8, claim IS NOT NULL
      FROM dpd_bursts WHERE name = \(name) AND NOT failed AND NOT idle
      """
    var due: [Int: (at: Int64, claimed: Bool)] = [:]
    for try await (key, instant, claimed) in try await connection.query(query, logger: Self.logger)
      .decode((String, Double, Bool).self)
    {
      due[Int(key.dropFirst())!] = (Int64(instant.rounded()), claimed)
    }
    return due
  }

  /// Where the store and the model disagree, or nil.
  func check() -> String? {
    for key in 0..<sequence.keyCount where runs[key] != model[key].runs {
      return "key \(key) ran \(runs[key]) in the store, \(model[key].runs) in the model"
    }
    for key in 0..<sequence.keyCount {
      let expected = model[key].waitingRuns.first?.run.at ?? model[key].dueInstant
      if due[key]?.at != expected {
        return "key \(key) is due at \(due[key].map { String($0.at) } ?? "none") in the store, "
          + "\(expected.map(String.init) ?? "none") in the model (now \(now))"
      }
    }
    return nil
  }
}
