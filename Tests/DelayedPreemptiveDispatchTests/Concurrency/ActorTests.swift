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

}
