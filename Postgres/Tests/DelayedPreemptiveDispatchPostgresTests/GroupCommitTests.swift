import Foundation
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The package's one batcher (`GroupCommit`, behind `delay` and runs' ends), with a writer that
/// records its batches instead of a database: no server needed, no real time waited on.
@Suite struct GroupCommitTests {
  /// An entry: its order key (nil: free of any order) and a number unique in the test.
  struct Entry: Sendable, Hashable {
    var key: String?
    var number: Int
  }

  /// What the writer saw: each batch, the statements in flight at most, and any key that was in
  /// two statements in flight at once.
  final class Record: Sendable {
    struct State {
      var batches: [[Entry]] = []
      var inFlight = 0
      var mostInFlight = 0
      var keysInFlight: [String: Int] = [:]
      var keyTwiceInFlight: [String] = []
    }
    let state = Locked(State())
    /// Closed: a writer holds its batch until opened (see ``Gate``).
    let gate = Gate()
  }

  /// A latch the writer waits on while it is closed.
  final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>(
      (true, []))
    func close() { state.withLock { $0.open = false } }
    func open() {
      let waiters = state.withLock { state in
        state.open = true
        defer { state.waiters = [] }
        return state.waiters
      }
      for waiter in waiters { waiter.resume() }
    }
    func pass() async {
      await withCheckedContinuation { continuation in
        let passes = state.withLock { state in
          if state.open { return true }
          state.waiters.append(continuation)
          return false
        }
        if passes { continuation.resume() }
      }
    }
  }

  /// A caller's `submit`, in a task of its own.
  func submitting(
    _ entry: Entry, deadline: ContinuousClock.Instant? = nil, to commit: GroupCommit<Writer>,
    through writer: Writer
  ) -> Task<Int, any Error> {
    Task { try await commit.submit(entry, deadline: deadline, writer: writer) }
  }

  struct Writer: GroupCommitWriter {
    typealias Output = Int
    let record: Record
    /// Entries whose write fails: the batch is split in single entries, as the package's
    /// writers split a batch that one entry spoiled.
    var failing: Set<Int> = []

    static func orderKey(of entry: Entry) -> String? { entry.key }
    func expired() -> any Error { Expired() }

    func write(_ batch: [GroupCommit<Self>.Waiting]) async {
      let keys = batch.compactMap(\.entry.key)
      record.state.withLock { state in
        state.batches.append(batch.map(\.entry))
        state.inFlight += 1
        state.mostInFlight = max(state.mostInFlight, state.inFlight)
        for key in keys {
          state.keysInFlight[key, default: 0] += 1
          if state.keysInFlight[key]! > 1 { state.keyTwiceInFlight.append(key) }
        }
      }
      await record.gate.pass()
      await Task.yield()
      record.state.withLock { state in
        state.inFlight -= 1
        for key in keys { state.keysInFlight[key]! -= 1 }
      }
      for waiting in batch {
        if failing.contains(waiting.entry.number) {
          waiting.answer(.failure(Refused(number: waiting.entry.number)))
        } else {
          waiting.answer(.success(waiting.entry.number * 10))
        }
      }
    }
  }

  struct Expired: Error {}
  struct Refused: Error, Equatable { var number: Int }

  /// A quiet batcher writes an entry from the caller's own task, as a batch of one, and
  /// answers it with its own outcome.
  @Test func aQuietEntryIsWrittenAloneFromTheCallersTask() async throws {
    let record = Record()
    let commit = GroupCommit<Writer>(maximumWriters: 2, maximumBatch: 10)
    let writer = Writer(record: record, failing: [2])
    #expect(
      try await commit.submit(Entry(key: "a", number: 1), deadline: nil, writer: writer) == 10)
    await #expect(throws: Refused(number: 2)) {
      try await commit.submit(Entry(key: "a", number: 2), deadline: nil, writer: writer)
    }
    #expect(
      record.state.withLock(\.batches) == [
        [Entry(key: "a", number: 1)], [Entry(key: "a", number: 2)],
      ])
  }

  /// While the writers are busy, entries wait and go as one batch, each key once per batch and
  /// never in two statements at once, in the order of the calls; at most `maximumWriters`
  /// statements are in flight; entries free of order share batches freely.
  @Test func busyWritersGatherTheWaitingEntriesInBatchesThatKeepEachKeysOrder() async throws {
    let record = Record()
    let commit = GroupCommit<Writer>(maximumWriters: 2, maximumBatch: 4)
    let writer = Writer(record: record)
    record.gate.close()
    // Two entries take the two writers and hold them.
    let first = submitting(Entry(key: "a", number: 0), to: commit, through: writer)
    let second = submitting(Entry(key: "b", number: 1), to: commit, through: writer)
    #expect(await eventually { record.state.withLock(\.inFlight) == 2 })
    // Then, in this order: a, a, c, nil, b, c, nil, d, e (the batch's bound is 4).
    let keys: [String?] = ["a", "a", "c", nil, "b", "c", nil, "d", "e"]
    var waiting: [Task<Int, any Error>] = []
    for (index, key) in keys.enumerated() {
      waiting.append(submitting(Entry(key: key, number: index + 2), to: commit, through: writer))
      // Each call joins the waiting list before the next one.
      #expect(await eventually { commit.waitingCount == index + 1 })
    }
    #expect(record.state.withLock(\.batches.count) == 2)
    record.gate.open()
    #expect(try await first.value == 0)
    #expect(try await second.value == 10)
    for (index, task) in waiting.enumerated() { #expect(try await task.value == (index + 2) * 10) }

    let state = record.state.withLock { $0 }
    #expect(state.keyTwiceInFlight.isEmpty)
    #expect(state.mostInFlight <= 2)
    #expect(state.batches.allSatisfy { $0.count <= 4 })
    for batch in state.batches {
      let keys = batch.compactMap(\.key)
      #expect(Set(keys).count == keys.count, "a key twice in one batch: \(batch)")
    }
    // Each key's entries were written in the order of the calls.
    let written = state.batches.flatMap { $0 }
    #expect(Set(written.map(\.number)) == Set(0..<11))
    for key in ["a", "b", "c", "d", "e"] {
      let numbers = written.filter { $0.key == key }.map(\.number)
      #expect(numbers == numbers.sorted(), "key \(key): \(numbers)")
    }
    // Fewer statements than entries: the waiting ones were gathered.
    #expect(state.batches.count < 11, "\(state.batches)")
  }

  /// While a gathering is set, a free writer waits for its minimum: fewer entries are not
  /// written (however long the test waits for the third, here within the hour), and the entry
  /// that reaches the minimum sends all three as one batch at once. Lifting the gathering writes
  /// what waits at once.
  @Test func aGatheringWriterWaitsForItsMinimumAndLiftingItWritesWhatWaits() async throws {
    let record = Record()
    let commit = GroupCommit<Writer>(maximumWriters: 1, maximumBatch: 10)
    let writer = Writer(record: record)
    commit.gather(.init(minimum: 3, wait: .seconds(3_600)), writer: writer)
    let first = submitting(Entry(key: nil, number: 0), to: commit, through: writer)
    let second = submitting(Entry(key: nil, number: 1), to: commit, through: writer)
    #expect(await eventually { commit.waitingCount == 2 })
    #expect(record.state.withLock(\.batches).isEmpty)
    let third = submitting(Entry(key: nil, number: 2), to: commit, through: writer)
    #expect(try await first.value == 0)
    #expect(try await second.value == 10)
    #expect(try await third.value == 20)
    #expect(
      record.state.withLock(\.batches).map { Set($0.map(\.number)) } == [[0, 1, 2]])

    let fourth = submitting(Entry(key: nil, number: 3), to: commit, through: writer)
    #expect(await eventually { commit.waitingCount == 1 })
    commit.gather(nil, writer: writer)
    #expect(try await fourth.value == 30)
    // Without a gathering, a quiet entry is again written alone from its caller's task.
    #expect(
      try await commit.submit(Entry(key: nil, number: 4), deadline: nil, writer: writer) == 40)
    #expect(record.state.withLock(\.batches).count == 3)
  }

  /// No entry waits longer than the gathering's time for want of others: two entries under a
  /// minimum of five are written once the older has waited 30 ms, not before.
  @Test func aGatheredBatchGoesOnceItsOldestEntryHasWaitedItsTime() async throws {
    let record = Record()
    let commit = GroupCommit<Writer>(maximumWriters: 1, maximumBatch: 10)
    let writer = Writer(record: record)
    commit.gather(.init(minimum: 5, wait: .milliseconds(30)), writer: writer)
    let start = ContinuousClock.now
    async let first = commit.submit(Entry(key: nil, number: 0), deadline: nil, writer: writer)
    async let second = commit.submit(Entry(key: nil, number: 1), deadline: nil, writer: writer)
    #expect(try await [first, second] == [0, 10])
    #expect(ContinuousClock.now - start >= .milliseconds(30))
    // Both were written, and none before the older had waited its time (on a loaded machine
    // the second call may come after that: then it is a batch of its own).
    #expect(record.state.withLock(\.batches).map(\.count).reduce(0, +) == 2)
  }

  /// An entry whose deadline passes while it waits for a batch fails as the writer says,
  /// unwritten; one without a deadline waits as long as it takes.
  @Test func anEntryWhoseDeadlinePassesWhileItWaitsFailsUnwritten() async throws {
    let record = Record()
    let commit = GroupCommit<Writer>(maximumWriters: 1, maximumBatch: 10)
    let writer = Writer(record: record)
    record.gate.close()
    let holder = submitting(Entry(key: "a", number: 0), to: commit, through: writer)
    #expect(await eventually { record.state.withLock(\.inFlight) == 1 })
    let late = submitting(
      Entry(key: "b", number: 1), deadline: .now, to: commit, through: writer)
    #expect(await eventually { commit.waitingCount == 1 })
    let patient = submitting(Entry(key: "c", number: 2), to: commit, through: writer)
    #expect(await eventually { commit.waitingCount == 2 })
    record.gate.open()
    #expect(try await holder.value == 0)
    await #expect(throws: Expired.self) { try await late.value }
    #expect(try await patient.value == 20)
    #expect(!record.state.withLock(\.batches).flatMap { $0 }.contains { $0.number == 1 })
  }

  /// A storm: 8 tasks × 200 entries over 5 keys and entries free of order. Each entry is
  /// answered once with its own outcome, no key is in two statements at once nor twice in one,
  /// each key's entries of one task are written in the order of its calls, and at most
  /// `maximumWriters` statements are in flight.
  @Test func aStormAnswersEachEntryOnceAndKeepsEveryBound() async throws {
    let record = Record()
    let commit = GroupCommit<Writer>(maximumWriters: 2, maximumBatch: 16)
    let writer = Writer(record: record, failing: Set(stride(from: 0, to: 1_600, by: 97)))
    let outcomes = try await withThrowingTaskGroup(of: [(Int, Int?)].self) { group in
      for task in 0..<8 {
        group.addTask {
          var outcomes: [(Int, Int?)] = []
          for index in 0..<200 {
            let number = task * 200 + index
            let key: String? = number % 7 == 0 ? nil : "k\((number * 31) % 5)"
            do {
              let output = try await commit.submit(
                Entry(key: key, number: number), deadline: nil, writer: writer)
              outcomes.append((number, output))
            } catch {
              outcomes.append((number, nil))
            }
          }
          return outcomes
        }
      }
      var all: [(Int, Int?)] = []
      for try await outcomes in group { all += outcomes }
      return all
    }
    #expect(outcomes.count == 1_600)
    #expect(Set(outcomes.map(\.0)).count == 1_600)
    for (number, output) in outcomes {
      #expect(output == (number % 97 == 0 ? nil : number * 10), "entry \(number)")
    }
    let state = record.state.withLock { $0 }
    #expect(state.keyTwiceInFlight.isEmpty)
    #expect(state.mostInFlight <= 2)
    #expect(state.batches.allSatisfy { $0.count <= 16 })
    let written = state.batches.flatMap { $0 }
    #expect(written.count == 1_600)
    for batch in state.batches {
      let keys = batch.compactMap(\.key)
      #expect(Set(keys).count == keys.count)
    }
    for task in 0..<8 {
      for key in 0..<5 {
        let numbers = written.filter { $0.key == "k\(key)" && $0.number / 200 == task }.map(
          \.number)
        #expect(numbers == numbers.sorted())
      }
    }
  }

  /// Polls `condition`, yielding between reads, until it holds, for at most 10 s.
  func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    let end = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < end {
      if condition() { return true }
      await Task.yield()
    }
    return condition()
  }
}
