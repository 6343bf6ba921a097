import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

/// Many threads at once: exactly one run per burst, every ticket resolved exactly once, and the
/// outcomes agree with what ran. Run under `--sanitize=thread` in CI. The real-time storms
/// follow the rule of `RealTime`: they wait for the queue eventually, off the cooperative
/// threads.
@Suite struct StormTests {
  /// Submissions made by `threads` threads; `index` is unique per submission. The storm runs off
  /// Swift concurrency's cooperative threads, which other suites' tasks need meanwhile.
  static func storm(
    threads: Int, callsPerThread: Int,
    submit: @escaping @Sendable (_ index: Int) -> DelayTicket
  ) async -> [(index: Int, ticket: DelayTicket)] {
    await offCooperativePool {
      stormNow(threads: threads, callsPerThread: callsPerThread, submit: submit)
    }
  }

  private static func stormNow(
    threads: Int, callsPerThread: Int,
    submit: @Sendable (_ index: Int) -> DelayTicket
  ) -> [(index: Int, ticket: DelayTicket)] {
    let tickets = LockBox<[(index: Int, ticket: DelayTicket)]>([])
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      var local: [(index: Int, ticket: DelayTicket)] = []
      local.reserveCapacity(callsPerThread)
      for call in 0..<callsPerThread {
        let index = thread * callsPerThread + call
        local.append((index, submit(index)))
      }
      tickets.withLock { $0.append(contentsOf: local) }
    }
    return tickets.withLock { $0 }
  }

  /// Every ticket that resolved `.executed` ran exactly once, and nothing else ran.
  static func expectOutcomesMatchRuns(
    _ tickets: [(index: Int, ticket: DelayTicket)], ran: Recorder<Int>
  ) async -> [DelayOutcome: Int] {
    var executed: [Int] = []
    var counts: [DelayOutcome: Int] = [:]
    for (index, ticket) in tickets {
      let outcome = await ticket.outcome
      counts[outcome, default: 0] += 1
      if outcome == .executed { executed.append(index) }
    }
    #expect(ran.elements.sorted() == executed.sorted())
    #expect(Set(ran.elements).count == ran.count)
    return counts
  }

  @Test func queueStormOnFrozenClockRunsExactlyOnce() async {
    let clock = ManualClock()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock)
    let ran = Recorder<Int>()
    let threads = TestScale.stormThreads
    let calls = TestScale.stormCallsPerThread
    let tickets = await Self.storm(threads: threads, callsPerThread: calls) { index in
      queue.delay(1) { ran.append(index) }
    }
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .seconds(1))
    #expect(ran.count == 1)
    let counts = await Self.expectOutcomesMatchRuns(tickets, ran: ran)
    #expect(counts == [.executed: 1, .preempted: threads * calls - 1])
  }

  @Test func actorStormRunsExactlyOnce() async {
    let clock = ManualClock()
    let actor = DelayedPreemptiveActor(clock: clock)
    let ran = Recorder<Int>()
    let tasks = TestScale.actorStormTasks
    let calls = TestScale.actorCallsPerTask
    let tickets = await withTaskGroup(of: [(index: Int, ticket: DelayTicket)].self) { group in
      for task in 0..<tasks {
        group.addTask {
          var local: [(index: Int, ticket: DelayTicket)] = []
          for call in 0..<calls {
            let index = task * calls + call
            local.append((index, await actor.delay(.seconds(1)) { ran.append(index) }))
          }
          return local
        }
      }
      return await group.reduce(into: []) { $0.append(contentsOf: $1) }
    }
    await clock.advance(by: .seconds(1))
    #expect(ran.count == 1)
    let counts = await Self.expectOutcomesMatchRuns(tickets, ran: ran)
    #expect(counts == [.executed: 1, .preempted: tasks * calls - 1])
  }

  /// Releasing the last reference while the timer is in flight: the task runs at most once,
  /// and its ticket says whether it did.
  @Test func releaseRacingTimerRunsAtMostOnce() async {
    let ran = Recorder<Int>()
    var tickets: [(index: Int, ticket: DelayTicket)] = []
    for index in 0..<500 {
      var queue: DelayedPreemptiveDispatchQueue? = DelayedPreemptiveDispatchQueue(label: "release")
      tickets.append((index, queue!.delay(index % 2 == 0 ? 0 : 0.0001) { ran.append(index) }))
      queue = nil
    }
    let counts = await Self.expectOutcomesMatchRuns(tickets, ran: ran)
    #expect(counts[.preempted] == nil)
  }

}
