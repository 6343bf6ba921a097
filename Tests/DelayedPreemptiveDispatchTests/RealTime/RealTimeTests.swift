import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

/// The real-time paths: `asyncAfter` for the queue, `ContinuousClock` for the actor. Each test
/// checks "not before the deadline" strictly, and that the task runs eventually, with no bound
/// on how late (the rule of `RealTime`).
@Suite(.tags(.realTime), .realTimeLimit) struct RealTimeTests {
  static func elapsed(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
  }

  @Test func queueRunsTaskNotBeforeDeadline() async {
    let ranAfter = Recorder<Double>()
    let start = DispatchTime.now()
    let queue = DelayedPreemptiveDispatchQueue(label: "real-time") {
      ranAfter.append(Self.elapsed(since: start))
    }
    let ticket = queue.delay(0.05)
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(await ticket.outcome == .executed)
    #expect(ranAfter.count == 1)
    #expect(ranAfter.elements.allSatisfy { $0 >= 0.05 })
  }

  @Test func queueExtendKeepsTheLatestDeadlineInRealTime() async {
    let ran = Recorder<String>()
    let start = DispatchTime.now()
    let queue = DelayedPreemptiveDispatchQueue(label: "real-time-extend")
    queue.delay(0.2) { ran.append("A") }
    queue.delay(0.05) { ran.append("B after \(Self.elapsed(since: start) >= 0.2)") }
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(ran.elements == ["B after true"])
  }

  @Test func queueCancelledTimerDoesNotFireLater() async {
    let ran = Recorder<String>()
    let queue = DelayedPreemptiveDispatchQueue(label: "real-time-cancel")
    queue.delay(0.02) { ran.append("cancelled") }
    queue.cancel()
    queue.delay(0.15) { ran.append("fresh") }
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(ran.elements == ["fresh"])
  }

  @Test func actorRunsTaskNotBeforeDeadline() async {
    let ranAfter = Recorder<Duration>()
    let clock = ContinuousClock()
    let start = clock.now
    let actor = DelayedPreemptiveActor { ranAfter.append(start.duration(to: clock.now)) }
    let ticket = await actor.delay(.milliseconds(50))
    #expect(await ticket.outcome == .executed)
    #expect(ranAfter.count == 1)
    #expect(ranAfter.elements.allSatisfy { $0 >= .milliseconds(50) })
  }

  /// Clock domains stay apart: a queue on a `ManualClock` never reads real time, so real time
  /// passing does not fire it; only advancing its clock does.
  @Test func queueOnManualClockIgnoresRealTime() async {
    let clock = ManualClock()
    let ran = Recorder<String>()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock) { ran.append("ran") }
    queue.delay(0.01)
    #expect(await offCooperativePool { queue.wait(timeout: .now() + 0.2) } == .timedOut)
    #expect(ran.all.isEmpty)
    await clock.advance(by: .milliseconds(10))
    #expect(ran.all == ["ran"])
  }

  /// `wait(timeout:)` from eight threads returns for all of them once the burst has run. The
  /// clock is a `ManualClock`, but each waiter waits up to `RealTime.eventually` in real time:
  /// the queue's work must get a thread first, so the test lives here, with the real-time
  /// suites (under a sanitizer, beside the storms, it once waited more than 120 s).
  @Test func waitFromManyThreadsReturnsForAll() async {
    let clock = ManualClock()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock) {}
    queue.delay(1)
    let waiters = DispatchGroup()
    let results = Recorder<DispatchTimeoutResult>()
    // Each waiter blocks a thread of its own (a serial queue with no target), not one of the
    // global pool's few threads that the queue's own work needs.
    for index in 0..<8 {
      DispatchQueue(label: "waiter \(index)").async(group: waiters) {
        results.append(queue.wait(timeout: RealTime.deadline()))
      }
    }
    await clock.advance(by: .seconds(1))
    await withCheckedContinuation { continuation in
      waiters.notify(queue: .global()) { continuation.resume() }
    }
    #expect(results.elements == Array(repeating: .success, count: 8))
  }
}
