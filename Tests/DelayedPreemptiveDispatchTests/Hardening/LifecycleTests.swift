import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

/// A task that drives its own queue or actor, and input that is odd but not a programmer error.
@Suite struct LifecycleTests {
  let clock = ManualClock()
  let ran = Recorder<String>()

  @Test func taskCanCancelABurstItStartedOnItsOwnQueue() async {
    let holder = WeakReference<DelayedPreemptiveDispatchQueue>()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock) { [ran] in
      ran.append("first")
      let queue = holder.object
      queue?.delay(0.1) { ran.append("never") }
      queue?.cancel()
    }
    holder.object = queue
    queue.delay(0.1)
    await clock.advance(by: .seconds(1))
    #expect(ran.all == ["first"])
    #expect(!queue.isPending)
  }

  @Test func taskCanFlushABurstItStartedOnItsOwnQueue() async {
    let holder = WeakReference<DelayedPreemptiveDispatchQueue>()
    let follower = Recorder<DelayTicket>()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock) { [ran] in
      ran.append("first")
      guard let queue = holder.object else { return }
      follower.append(queue.delay(60) { ran.append("flushed") })
      queue.flush()  // runs right after this task, on the same queue
    }
    holder.object = queue
    queue.delay(0.1)
    await clock.advance(by: .milliseconds(100))
    #expect(await follower.all.first?.outcome == .executed)
    #expect(ran.all == ["first", "flushed"])
  }

  @Test func taskCanCancelItsOwnActor() async {
    let holder = WeakReference<DelayedPreemptiveActor<ManualClock>>()
    let actor = DelayedPreemptiveActor(clock: clock) { [ran] in
      ran.append("first")
      guard let actor = holder.object else { return }
      await actor.delay(.milliseconds(100)) { ran.append("never") }
      await actor.cancel()
    }
    holder.object = actor
    await actor.delay(.milliseconds(100))
    await clock.advance(by: .seconds(1))
    #expect(ran.all == ["first"])
    #expect(await !actor.isPending)
  }

  @Test func zeroAndNegativeDelaysAreDueNow() async {
    let queue = DelayedPreemptiveDispatchQueue(clock: clock)
    let actor = DelayedPreemptiveActor(clock: clock)
    queue.delay(for: .zero) { [ran] in ran.append("queue zero") }
    await clock.advance(by: .zero)
    queue.delay(-5) { [ran] in ran.append("queue negative") }
    await clock.advance(by: .zero)
    await actor.delay(.zero) { [ran] in ran.append("actor zero") }
    await clock.advance(by: .zero)
    await actor.delay(.seconds(-5)) { [ran] in ran.append("actor negative") }
    await clock.advance(by: .zero)
    #expect(ran.all == ["queue zero", "queue negative", "actor zero", "actor negative"])
  }

  @Test func hugeDurationsMeanNeverUnlessFlushed() async {
    let queue = DelayedPreemptiveDispatchQueue(clock: clock)
    let actor = DelayedPreemptiveActor(
      clock: clock, options: DelayOptions(maxWait: .seconds(Int64.max)))
    let queued = queue.delay(for: .seconds(Int64.max)) { [ran] in ran.append("queue") }
    let acted = await actor.delay(.seconds(Int64.max)) { [ran] in ran.append("actor") }
    await clock.advance(by: .seconds(50 * 365 * 86_400))
    #expect(ran.all.isEmpty)
    queue.flush()
    await actor.flush()
    #expect(await queued.outcome == .executed)
    #expect(await acted.outcome == .executed)
    #expect(Set(ran.all) == ["queue", "actor"])
  }

  @Test func realTimeHugeDelayWaitsUntilFlushed() async {
    let queue = DelayedPreemptiveDispatchQueue(label: "huge")
    let ticket = queue.delay(1e300) { [ran] in ran.append("flushed") }
    #expect(queue.wait(timeout: .now()) == .timedOut)
    queue.flush()
    #expect(await ticket.outcome == .executed)
  }
}
