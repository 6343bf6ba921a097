import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

/// `DelayedPreemptiveDispatchQueue` on `ManualClock`: the seed behaviour, the fixes of the
/// original design, and tickets. No test sleeps.
@Suite struct DispatchQueueTests {
  let clock = ManualClock()
  let ran = Recorder<String>()

  func makeQueue(_ options: DelayOptions = DelayOptions(), target: DispatchQueue? = nil)
    -> DelayedPreemptiveDispatchQueue
  {
    DelayedPreemptiveDispatchQueue(target: target, clock: clock, options: options)
  }

  func task(_ name: String) -> @Sendable () -> Void {
    { [ran] in ran.append(name) }
  }

  // MARK: Kept from the original design

  @Test func extendRunsLastTaskAtLatestDeadline() async {
    let queue = makeQueue()
    let first = queue.delay(0.5, task: task("A"))
    let second = queue.delay(0.1, task: task("B"))
    await clock.advance(by: .milliseconds(499))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
    #expect(await first.outcome == .preempted)
    #expect(await second.outcome == .executed)
  }

  @Test func restartRunsAtNewestDeadline() async {
    let queue = makeQueue(DelayOptions(deadlinePolicy: .restart))
    queue.delay(0.5, task: task("A"))
    await clock.advance(by: .milliseconds(100))
    queue.delay(for: .milliseconds(100), task: task("B"))
    await clock.advance(by: .milliseconds(99))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
    await clock.advance(by: .seconds(1))
    #expect(ran.elements == ["B"])
  }

  @Test func taskNilReusesTaskGivenLastAndQueueIsReusable() async {
    let queue = DelayedPreemptiveDispatchQueue(clock: clock, task: task("init"))
    queue.delay(0.1)
    await clock.advance(by: .milliseconds(100))
    queue.delay(0.1, task: task("B"))
    await clock.advance(by: .milliseconds(100))
    queue.delay(0.1)
    await clock.advance(by: .milliseconds(100))
    #expect(ran.elements == ["init", "B", "B"])
  }

  @Test func noTaskEverGivenResolvesCancelledAtOnce() async {
    let queue = makeQueue()
    let ticket = queue.delay(0.1)
    #expect(await ticket.outcome == .cancelled)
    #expect(!queue.isPending)
    #expect(clock.pendingTimerCount == 0)
  }

  // MARK: Fixes of the original design

  /// Fix 2: a `delay` after the timer expired but before the task ran is neither lost nor run
  /// at once: it joins the burst, and the timer re-arms for the new deadline.
  @Test func delayBetweenTimerExpiryAndRunJoinsBurst() async {
    let gate = DispatchQueue(label: "gate")
    let blocked = DispatchSemaphore(value: 0)
    gate.async { blocked.wait() }
    let queue = makeQueue(target: gate)
    queue.delay(1, task: task("A"))
    let advancing = Task { await clock.advance(by: .seconds(1)) }
    while clock.now.offset < .seconds(1) { await Task.yield() }
    // The timer has expired; its callback waits behind `gate`.
    let late = queue.delay(0.5, task: task("B"))
    blocked.signal()
    await advancing.value
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(499))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
    #expect(await late.outcome == .executed)
  }

  /// Fix 3: a task can schedule the next run of its own queue.
  @Test func taskCanRescheduleItselfFromInsideItsRun() async {
    let holder = WeakReference<DelayedPreemptiveDispatchQueue>()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock) { [ran] in
      ran.append("tick")
      if ran.count < 3 { holder.object?.delay(0.1) }
    }
    holder.object = queue
    queue.delay(0.1)
    for _ in 0..<5 { await clock.advance(by: .milliseconds(100)) }
    #expect(ran.elements == ["tick", "tick", "tick"])
    #expect(!queue.isPending)
  }

  /// Fix 4: submissions move the deadline of one timer instead of arming one each.
  @Test func manySubmissionsArmOneTimer() async {
    let queue = makeQueue()
    for index in 0..<100_000 { queue.delay(1 + Double(index) * 1e-6, task: task("last")) }
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .seconds(2))
    #expect(ran.elements == ["last"])
    #expect(clock.pendingTimerCount == 0)
  }

  /// Fix 5: after `cancel()`, a `delay` starts fresh from now and no old timer affects it.
  @Test func cancelThenDelayStartsFresh() async {
    let queue = makeQueue()
    let cancelled = queue.delay(1, task: task("A"))
    await clock.advance(by: .milliseconds(500))
    queue.cancel()
    #expect(await cancelled.outcome == .cancelled)
    queue.delay(0.2, task: task("B"))
    await clock.advance(by: .milliseconds(199))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
    await clock.advance(by: .seconds(2))
    #expect(ran.elements == ["B"])
  }

  /// Fix 4, with cancel: a loop of `delay` and `cancel` keeps one timer in flight, which the
  /// next burst adopts.
  @Test func delayCancelLoopKeepsOneTimerInFlight() async {
    let queue = makeQueue()
    for _ in 0..<10_000 {
      queue.delay(1, task: task("cancelled"))
      queue.cancel()
    }
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .milliseconds(500))
    queue.delay(1, task: task("kept"))
    await clock.advance(by: .milliseconds(999))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["kept"])
  }

  @Test func hugeDelayWaitsUntilFlushed() async {
    let queue = makeQueue()
    let ticket = queue.delay(1e300, task: task("A"))
    await clock.advance(by: .seconds(86_400 * 365))
    #expect(ran.elements.isEmpty)
    #expect(queue.isPending)
    queue.flush()
    #expect(await ticket.outcome == .executed)
  }

  /// Fix 6: constant preemption cannot starve the task when `maxWait` is set.
  @Test func maxWaitRunsTaskDespiteConstantPreemption() async {
    let queue = makeQueue(DelayOptions(maxWait: .seconds(1)))
    for _ in 0..<10 {
      queue.delay(0.2, task: task("A"))
      await clock.advance(by: .milliseconds(100))
    }
    #expect(ran.elements == ["A"])
  }

  /// Fix 7: tasks run on the instance's serial queue, which targets the given queue.
  @Test func taskRunsOnSerialQueueTargetingGivenQueue() async {
    let key = DispatchSpecificKey<String>()
    let target = DispatchQueue(label: "custom-target")
    target.setSpecific(key: key, value: "custom-target")
    let queue = makeQueue(target: target)
    queue.delay(0.1) { [ran] in ran.append(DispatchQueue.getSpecific(key: key) ?? "elsewhere") }
    await clock.advance(by: .milliseconds(100))
    #expect(ran.elements == ["custom-target"])
  }

  /// Fix 8: a pending timer does not keep the queue alive, and releasing it cancels the burst
  /// and frees the task.
  @Test func releaseCancelsPendingBurstAndFreesTask() async {
    final class Captured: Sendable {}
    weak var weakQueue: DelayedPreemptiveDispatchQueue?
    weak var weakCaptured: Captured?
    var ticket: DelayTicket?
    do {
      let captured = Captured()
      weakCaptured = captured
      let queue = makeQueue()
      weakQueue = queue
      ticket = queue.delay(1) { [ran] in ran.append("ran \(captured)") }
    }
    #expect(weakQueue == nil)
    #expect(weakCaptured == nil)
    #expect(await ticket?.outcome == .cancelled)
    await clock.advance(by: .seconds(2))
    #expect(ran.elements.isEmpty)
  }

  // MARK: flush, cancel, leading, wait

  @Test func flushRunsPendingTaskOnQueueAndEndsBurst() async {
    let queue = makeQueue()
    let ticket = queue.delay(10, task: task("A"))
    queue.flush()
    #expect(!queue.isPending)
    #expect(await ticket.outcome == .executed)
    #expect(ran.elements == ["A"])
    await clock.advance(by: .seconds(20))
    #expect(ran.elements == ["A"])
  }

  @Test func flushWhenIdleDoesNothing() async {
    let queue = DelayedPreemptiveDispatchQueue(clock: clock, task: task("A"))
    queue.flush()
    #expect(queue.wait(timeout: .now()) == .success)
    #expect(ran.elements.isEmpty)
  }

  @Test func leadingRunsAtOnceThenOneTrailingRun() async {
    let queue = makeQueue(DelayOptions(leading: true))
    let leading = queue.delay(0.1, task: task("A"))
    #expect(await leading.outcome == .executed)
    #expect(ran.elements == ["A"])
    let middle = queue.delay(0.1, task: task("B"))
    let last = queue.delay(0.1, task: task("C"))
    await clock.advance(by: .milliseconds(100))
    #expect(ran.elements == ["A", "C"])
    #expect(await middle.outcome == .preempted)
    #expect(await last.outcome == .executed)
  }

  @Test func waitReturnsOnceBurstAndRunAreOver() async {
    let queue = makeQueue()
    queue.delay(0.1, task: task("A"))
    #expect(queue.wait(timeout: .now()) == .timedOut)
    await clock.advance(by: .milliseconds(100))
    #expect(queue.wait(timeout: .now()) == .success)
  }

  @Test func ticketsReportPreemptionAsSoonAsReplaced() async {
    let queue = makeQueue()
    let first = queue.delay(10, task: task("A"))
    let waiter = Task { await first.outcome }
    queue.delay(10, task: task("B"))
    #expect(await waiter.value == .preempted)
    #expect(queue.isPending)
    queue.cancel()
  }

  @Test func durationAndSecondsOverloadsAgree() async {
    let queue = makeQueue()
    queue.delay(for: .milliseconds(300), task: task("A"))
    queue.delay(0.3, task: task("B"))
    await clock.advance(by: .milliseconds(299))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
  }
}
