import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// Waiting for an idle actor, flushing from tasks the actor's task spawned, and cancelling a
/// stale running task. On `ManualClock`; no test sleeps.
@Suite struct ActorShutdownTests {
  let clock = ManualClock()
  let log = Recorder<String>()

  @Test func waitReturnsOnlyAfterTaskThatAlreadyStartedHasFinished() async {
    let actor = DelayedPreemptiveActor(clock: clock)
    let started = AsyncGate()
    let release = AsyncGate()
    let saved = LockBox(false)
    await actor.delay(.milliseconds(500)) {
      started.open()
      await release.wait()
      saved.withLock { $0 = true }
    }
    let advancing = Task { await clock.advance(by: .milliseconds(500)) }
    await started.wait()
    await actor.flush()  // nothing is pending any more: returns at once, the save still runs
    #expect(saved.withLock { $0 } == false)
    let waiting = Task {
      await actor.wait()
      return saved.withLock { $0 }
    }
    release.open()
    #expect(await waiting.value == true)
    await advancing.value
  }

  @Test func waitCoversPendingBurstUntilItRuns() async {
    let actor = DelayedPreemptiveActor(clock: clock)
    await actor.wait()  // idle: returns at once
    await actor.delay(.seconds(1)) { [log] in log.append("ran") }
    let waiting = Task {
      await actor.wait()
      log.append("waited")
    }
    await clock.advance(by: .seconds(1))
    await waiting.value
    #expect(log.all == ["ran", "waited"])
  }

  @Test func flushThenWaitIsAGracefulShutdown() async {
    let actor = DelayedPreemptiveActor(clock: clock)
    await actor.delay(.seconds(30)) { [log] in log.append("saved") }
    await actor.flush()
    await actor.wait()
    #expect(log.all == ["saved"])
    #expect(await actor.isPending == false)
  }

  @Test func flushFromTaskSpawnedByRunningTaskWaitsForTheFlushedTask() async {
    let actor = DelayedPreemptiveActor(clock: clock)
    let reference = WeakReference<DelayedPreemptiveActor<ManualClock>>()
    reference.object = actor
    let child = LockBox<Task<Void, Never>?>(nil)
    await actor.delay(.zero) { [log] in
      let spawned = Task {
        guard let actor = reference.object else { return }
        await actor.delay(.seconds(10)) { log.append("second ran") }
        await actor.flush()
        log.append("flush returned")
      }
      child.withLock { $0 = spawned }
    }
    await clock.advance(by: .zero)
    await child.withLock { $0 }?.value
    #expect(log.all == ["second ran", "flush returned"])
  }

}
