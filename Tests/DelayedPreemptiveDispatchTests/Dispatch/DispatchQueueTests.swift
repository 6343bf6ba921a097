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

  // MARK: Fixes of the original design

  /// Fix 2: a `delay` after the timer expired but before the task ran is neither lost nor run
  /// at once. Its burst was due, so it ends that burst first, as the timer does (rule T7):
  /// `A` runs, and `B` waits its own half second.
  @Test func delayBetweenTimerExpiryAndRunRunsTheDueBurstFirst() async {
    let gate = DispatchQueue(label: "gate")
    let blocked = DispatchSemaphore(value: 0)
    gate.async { blocked.wait() }
    let queue = makeQueue(target: gate)
    let first = queue.delay(1, task: task("A"))
    let advancing = Task { await clock.advance(by: .seconds(1)) }
    while clock.now.offset < .seconds(1) { await Task.yield() }
    // The timer has expired; the run waits behind `gate`.
    let late = queue.delay(0.5, task: task("B"))
    blocked.signal()
    await advancing.value
    #expect(ran.elements == ["A"])
    #expect(await first.outcome == .executed)
    await clock.advance(by: .milliseconds(499))
    #expect(ran.elements == ["A"])
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["A", "B"])
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

  @Test func hugeDelayWaitsUntilFlushed() async {
    let queue = makeQueue()
    let ticket = queue.delay(1e300, task: task("A"))
    await clock.advance(by: .seconds(86_400 * 365))
    #expect(ran.elements.isEmpty)
    #expect(queue.isPending)
    queue.flush()
    #expect(await ticket.outcome == .executed)
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

  // MARK: flush, cancel, leading, wait

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
