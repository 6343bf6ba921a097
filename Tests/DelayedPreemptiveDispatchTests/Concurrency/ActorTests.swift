import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// `DelayedPreemptiveActor` on `ManualClock`: the same rules as the queue. No test sleeps.
@Suite struct ActorTests {
  let clock = ManualClock()
  let ran = Recorder<String>()

  func makeActor(_ options: DelayOptions = DelayOptions()) -> DelayedPreemptiveActor<ManualClock> {
    DelayedPreemptiveActor(clock: clock, options: options)
  }

  func task(_ name: String) -> @Sendable () async -> Void {
    { [ran] in ran.append(name) }
  }

  @Test func extendRunsLastTaskAtLatestDeadline() async {
    let actor = makeActor()
    let first = await actor.delay(.milliseconds(500), task: task("A"))
    let second = await actor.delay(.milliseconds(100), task: task("B"))
    await clock.advance(by: .milliseconds(499))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
    #expect(await first.outcome == .preempted)
    #expect(await second.outcome == .executed)
  }

  @Test func restartRunsAtNewestDeadline() async {
    let actor = makeActor(DelayOptions(deadlinePolicy: .restart))
    await actor.delay(.milliseconds(500), task: task("A"))
    await clock.advance(by: .milliseconds(100))
    await actor.delay(.milliseconds(100), task: task("B"))
    await clock.advance(by: .milliseconds(100))
    #expect(ran.elements == ["B"])
    await clock.advance(by: .seconds(1))
    #expect(ran.elements == ["B"])
  }

  @Test func taskNilReusesLastTaskAndActorIsReusable() async {
    let actor = DelayedPreemptiveActor(clock: clock, task: task("init"))
    await actor.delay(.milliseconds(100))
    await clock.advance(by: .milliseconds(100))
    await actor.delay(.milliseconds(100), task: task("B"))
    await clock.advance(by: .milliseconds(100))
    await actor.delay(.milliseconds(100))
    await clock.advance(by: .milliseconds(100))
    #expect(ran.elements == ["init", "B", "B"])
  }

  @Test func noTaskEverGivenResolvesCancelledAtOnce() async {
    let actor = makeActor()
    #expect(await actor.delay(.milliseconds(100)).outcome == .cancelled)
    #expect(await !actor.isPending)
  }

  @Test func cancelThenDelayStartsFresh() async {
    let actor = makeActor()
    let cancelled = await actor.delay(.seconds(1), task: task("A"))
    await clock.advance(by: .milliseconds(500))
    await actor.cancel()
    #expect(await cancelled.outcome == .cancelled)
    await actor.delay(.milliseconds(200), task: task("B"))
    await clock.advance(by: .milliseconds(199))
    #expect(ran.elements.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.elements == ["B"])
    await clock.advance(by: .seconds(2))
    #expect(ran.elements == ["B"])
  }

  @Test func maxWaitRunsTaskDespiteConstantPreemption() async {
    let actor = makeActor(DelayOptions(maxWait: .seconds(1)))
    for _ in 0..<10 {
      await actor.delay(.milliseconds(200), task: task("A"))
      await clock.advance(by: .milliseconds(100))
    }
    #expect(ran.elements == ["A"])
  }

  @Test func leadingRunsAtOnceThenOneTrailingRun() async {
    let actor = makeActor(DelayOptions(leading: true))
    #expect(await actor.delay(.milliseconds(100), task: task("A")).outcome == .executed)
    let middle = await actor.delay(.milliseconds(100), task: task("B"))
    let last = await actor.delay(.milliseconds(100), task: task("C"))
    await clock.advance(by: .milliseconds(100))
    #expect(ran.elements == ["A", "C"])
    #expect(await middle.outcome == .preempted)
    #expect(await last.outcome == .executed)
  }

  @Test func flushReturnsAfterTaskHasFinished() async {
    let actor = makeActor()
    let ticket = await actor.delay(.seconds(10), task: task("A"))
    await actor.flush()
    #expect(ran.elements == ["A"])
    #expect(await !actor.isPending)
    #expect(await ticket.outcome == .executed)
    await clock.advance(by: .seconds(20))
    #expect(ran.elements == ["A"])
  }

  @Test func flushWhenIdleDoesNothing() async {
    let actor = DelayedPreemptiveActor(clock: clock, task: task("A"))
    await actor.flush()
    #expect(ran.elements.isEmpty)
  }

  @Test func taskCanDelayAndFlushItsOwnActor() async {
    let holder = WeakReference<DelayedPreemptiveActor<ManualClock>>()
    let actor = DelayedPreemptiveActor(clock: clock) { [ran] in
      ran.append("run")
      guard let actor = holder.object else { return }
      if ran.count == 1 { await actor.delay(.milliseconds(100)) }
      if ran.count == 2 {
        await actor.delay(.seconds(5))
        await actor.flush()  // from inside its own task: must not wait for itself
      }
    }
    holder.object = actor
    await actor.delay(.milliseconds(100))
    await clock.advance(by: .milliseconds(100))
    await clock.advance(by: .milliseconds(100))
    // The second run flushed its own actor: that third run follows it without the clock.
    for _ in 0..<100_000 where ran.count < 3 { await Task.yield() }
    #expect(ran.count == 3)
    #expect(await !actor.isPending)
  }

  /// A timer's run blocks; a flushed run of the next burst must wait for it to return.
  @Test func tasksOfOneActorNeverOverlap() async {
    let actor = makeActor()
    let (gate, opener) = AsyncStream<Void>.makeStream()
    await actor.delay(.milliseconds(100)) { [ran] in
      ran.append("A begins")
      for await _ in gate { break }
      ran.append("A ends")
    }
    let timer = Task { await clock.advance(by: .milliseconds(100)) }
    while ran.elements.isEmpty { await Task.yield() }
    await actor.delay(.seconds(1), task: task("B"))
    let flushing = Task { await actor.flush() }
    for _ in 0..<1_000 { await Task.yield() }
    #expect(ran.elements == ["A begins"])
    opener.yield()
    await timer.value
    await flushing.value
    #expect(ran.elements == ["A begins", "A ends", "B"])
  }

  @Test func releaseCancelsPendingBurstAndFreesTask() async {
    final class Captured: Sendable {}
    weak var weakActor: DelayedPreemptiveActor<ManualClock>?
    weak var weakCaptured: Captured?
    var ticket: DelayTicket?
    do {
      let captured = Captured()
      weakCaptured = captured
      let actor = makeActor()
      weakActor = actor
      ticket = await actor.delay(.seconds(1)) { [ran] in ran.append("ran \(captured)") }
    }
    #expect(weakActor == nil)
    #expect(weakCaptured == nil)
    #expect(await ticket?.outcome == .cancelled)
    await clock.advance(by: .seconds(2))
    #expect(ran.elements.isEmpty)
  }

  @Test func delayCancelLoopKeepsOneTimerInFlight() async {
    let actor = makeActor()
    for _ in 0..<1_000 {
      await actor.delay(.seconds(1), task: task("cancelled"))
      await actor.cancel()
    }
    #expect(clock.pendingTimerCount == 1)
    await actor.delay(.seconds(1), task: task("kept"))
    await clock.advance(by: .seconds(1))
    #expect(ran.elements == ["kept"])
  }

  @Test func manySubmissionsArmOneTimer() async {
    let actor = makeActor()
    for index in 0..<10_000 {
      await actor.delay(.milliseconds(1_000 + index / 100), task: task("last"))
    }
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .seconds(2))
    #expect(ran.elements == ["last"])
  }
}
