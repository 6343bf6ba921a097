import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

/// The storms of ``StormTests`` that wait on real time (the queue's timers, `wait(timeout:)`, a
/// task that blocks its thread): a suite of the real-time kind, with its time limit, so that CI
/// runs it under the sanitizers in the real-time suites' own process, away from the CPU-bound
/// storms and model tests that starved such waits there.
@Suite(.tags(.realTime), .realTimeLimit) struct RealTimeStormTests {
  @Test func realTimeQueueStormThenFlushRunsExactlyOnce() async {
    let queue = DelayedPreemptiveDispatchQueue(label: "storm")
    let ran = Recorder<Int>()
    let tickets = await StormTests.storm(
      threads: TestScale.stormThreads, callsPerThread: TestScale.stormCallsPerThread
    ) { index in
      queue.delay(600) { ran.append(index) }
    }
    queue.flush()
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(ran.count == 1)
    let counts = await StormTests.expectOutcomesMatchRuns(tickets, ran: ran)
    #expect(counts[.executed] == 1)
  }

  /// `delay`, `cancel` and `flush` from four threads at once, on a short real-time delay so
  /// that timers fire during the storm too.
  @Test func delayCancelFlushRaceKeepsExactlyOnce() async {
    let queue = DelayedPreemptiveDispatchQueue(label: "race")
    let ran = Recorder<Int>()
    let tickets = await StormTests.storm(threads: 4, callsPerThread: 5_000) { index in
      switch index % 10 {
      case 0: queue.cancel()
      case 1: queue.flush()
      default: break
      }
      return queue.delay(index % 3 == 0 ? 0 : 0.0005) { ran.append(index) }
    }
    queue.cancel()
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(!queue.isPending)
    let counts = await StormTests.expectOutcomesMatchRuns(tickets, ran: ran)
    #expect(counts.values.reduce(0, +) == tickets.count)
    #expect(counts[.executed, default: 0] >= 1)
  }

  /// Releasing the last reference while the task runs lets it finish as `.executed`.
  @Test func releaseWhileTaskRunsLetsItFinish() async {
    let running = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    let ran = Recorder<Int>()
    var queue: DelayedPreemptiveDispatchQueue? = DelayedPreemptiveDispatchQueue(label: "running")
    let ticket = queue!.delay(0) {
      running.signal()
      proceed.wait()
      ran.append(1)
    }
    running.wait()
    queue = nil
    proceed.signal()
    #expect(await ticket.outcome == .executed)
    #expect(ran.elements == [1])
  }

  /// `cancel()` racing the timer's fire: each burst either ran (ticket `.executed`) or was
  /// cancelled (ticket `.cancelled`, task never ran).
  @Test func cancelRacingTimerFireIsExactlyOnce() async {
    let queue = DelayedPreemptiveDispatchQueue(label: "cancel-race")
    let ran = Recorder<Int>()
    var tickets: [(index: Int, ticket: DelayTicket)] = []
    let cancelled = DispatchSemaphore(value: 0)
    for index in 0..<2_000 {
      tickets.append((index, queue.delay(0) { ran.append(index) }))
      // The cancel races the timer from another thread; the next burst starts after it.
      DispatchQueue.global().async {
        queue.cancel()
        cancelled.signal()
      }
      cancelled.wait()
    }
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    let counts = await StormTests.expectOutcomesMatchRuns(tickets, ran: ran)
    #expect(counts[.executed, default: 0] + counts[.cancelled, default: 0] == tickets.count)
  }
}
