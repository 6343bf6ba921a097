import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// The ticket records: one packed word per burst, guarded by locks shared by every record of the
/// process (`BurstRecordLocks`), with the tasks that await a ticket kept beside the lock. A
/// ticket keeps its outcome after its key and its instance are gone, and awaiting tasks of many
/// records that share a lock each learn their own outcome.
@Suite struct BurstRecordTests {
  /// More keys than there are record locks, so that records share them.
  static let keyCount = BurstRecordLocks.count * 4

  @Test(arguments: [KeyedShellTests.Shell.queue, .actor], [false, true])
  func ticketsKeepTheirOutcomeAfterTheKeyAndTheInstanceAreGone(
    _ shell: KeyedShellTests.Shell, leading: Bool
  ) async {
    let clock = ManualClock()
    var keyed: KeyedShellTests.Keyed? = KeyedShellTests.Keyed(
      shell, clock: clock, options: DelayOptions(leading: leading)
    ) { _, _ in }
    var tickets: [[DelayTicket]] = []
    for key in 0..<Self.keyCount {
      var keyTickets: [DelayTicket] = []
      for value in ["a", "b", "c"] { keyTickets.append(await keyed!.delay(key, 1_000, value)) }
      tickets.append(keyTickets)
      if key % 3 == 0 { await keyed!.cancel(key) }
    }
    await keyed!.flushAllAndWait()
    #expect(await keyed!.footprint() == (0, 0))
    keyed = nil  // the instance and every key's state are gone; the tickets are all that is left

    for (key, keyTickets) in tickets.enumerated() {
      let last: DelayOutcome = key % 3 == 0 ? .cancelled : .executed
      let expected: [DelayOutcome] = [leading ? .executed : .preempted, .preempted, last]
      var outcomes: [DelayOutcome] = []
      for ticket in keyTickets { outcomes.append(await ticket.outcome) }
      #expect(outcomes == expected, "key \(key)")
    }
  }

  /// Rounds of submissions to every key from many threads, each ticket awaited by a task of its
  /// own as soon as it exists: the preemptions reach tasks that wait on records sharing a lock.
  @Test func manyAwaitersOnSharedLocksEachLearnTheirOutcome() async {
    let clock = ManualClock()
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Int>(clock: clock) { _, _ in }
    let rounds = 6
    var outcomes: [Int: [Int: DelayOutcome]] = [:]
    await withTaskGroup(of: (key: Int, round: Int, outcome: DelayOutcome).self) { group in
      for round in 0..<rounds {
        let tickets = await offCooperativePool {
          let made = LockBox<[(Int, DelayTicket)]>([])
          DispatchQueue.concurrentPerform(iterations: Self.keyCount) { key in
            let ticket = queue.delay(key, for: .seconds(1), value: round)
            made.withLock { $0.append((key, ticket)) }
          }
          return made.withLock { $0 }
        }
        for (key, ticket) in tickets {
          group.addTask { (key, round, await ticket.outcome) }
        }
      }
      await offCooperativePool {
        queue.flushAll()
        _ = queue.wait()
      }
      for await (key, round, outcome) in group { outcomes[key, default: [:]][round] = outcome }
    }
    #expect(outcomes.count == Self.keyCount)
    for (key, byRound) in outcomes {
      let expected = (0..<rounds).map { $0 == rounds - 1 ? DelayOutcome.executed : .preempted }
      #expect((0..<rounds).map { byRound[$0] } == expected, "key \(key)")
    }
  }

  /// Sequence numbers are kept modulo 2⁵⁶ in the word; across that boundary, a ticket still
  /// compares right with the numbers the record holds.
  @Test func packedSequenceNumbersCompareAcrossTheirWrap() {
    let wrap: UInt64 = 1 << 56
    var word = BurstRecordWord(keepsAll: false)
    #expect(word.outcome(of: wrap - 2, leading: false) == nil)
    word.notePreempted(below: wrap + 1)
    #expect(word.outcome(of: wrap - 2, leading: false) == .preempted)
    #expect(word.outcome(of: wrap, leading: false) == .preempted)
    #expect(word.outcome(of: wrap + 1, leading: false) == nil)
    #expect(word.outcome(of: wrap - 2, leading: true) == nil)
    word.notePreempted(below: wrap - 1)  // an earlier number moves nothing back
    #expect(word.outcome(of: wrap, leading: false) == .preempted)

    word.close(lastSeq: wrap + 3)
    #expect(word.outcome(of: wrap + 1, leading: false) == .preempted)
    #expect(word.outcome(of: wrap + 3, leading: false) == nil)
    word.lastOutcome = .executed
    word.leadingFinished = true
    #expect(word.outcome(of: wrap + 3, leading: false) == .executed)
    #expect(word.outcome(of: wrap + 3 + wrap / 2, leading: false) == .preempted)
    #expect(word.outcome(of: wrap - 2, leading: true) == .executed)
    word.notePreempted(below: wrap + 9)  // closed: nothing changes
    #expect(word.outcome(of: wrap + 3, leading: false) == .executed)
  }

  @Test func packedWordKeepsEveryFieldApart() {
    var word = BurstRecordWord(keepsAll: true)
    word.hasWaiters = true
    word.close(lastSeq: nil)
    #expect(word.keepsAll && word.closed && word.hasWaiters && !word.leadingFinished)
    #expect(word.outcome(of: 5, leading: false) == .preempted)
    for outcome in [DelayOutcome.executed, .preempted, .cancelled] {
      var closed = BurstRecordWord(keepsAll: true)
      closed.close(lastSeq: UInt64.max)
      closed.lastOutcome = outcome
      #expect(closed.lastOutcome == outcome)
      #expect(closed.outcome(of: 7, leading: false) == outcome, "keeps all: every one resolves")
      #expect(closed.keepsAll && closed.closed && !closed.hasWaiters)
    }
  }
}
