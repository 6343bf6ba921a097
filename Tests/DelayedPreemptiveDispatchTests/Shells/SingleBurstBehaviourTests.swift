import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// The rules of one burst line, once, on every shell that follows them: the queue, the actor,
/// and their keyed forms with one key (``ShellKind``). All on `ManualClock`; no test sleeps.
@Suite struct SingleBurstBehaviourTests {
  let clock = ManualClock()
  let ran = Recorder<String>()

  func make(_ kind: ShellKind, _ options: DelayOptions = DelayOptions()) -> Shell {
    kind.make(clock: clock, options: options, ran: ran)
  }

  @Test(arguments: ShellKind.allCases)
  func extendRunsLastTaskAtLatestDeadline(_ kind: ShellKind) async {
    let shell = make(kind)
    let first = await shell.delay(.milliseconds(500), "A")
    let second = await shell.delay(.milliseconds(100), "B")
    await clock.advance(by: .milliseconds(499))
    #expect(ran.all.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.all == ["B"])
    #expect(await first.outcome == .preempted)
    #expect(await second.outcome == .executed)
  }

  @Test(arguments: ShellKind.allCases)
  func restartRunsAtNewestDeadline(_ kind: ShellKind) async {
    let shell = make(kind, DelayOptions(deadlinePolicy: .restart))
    await shell.delay(.milliseconds(500), "A")
    await clock.advance(by: .milliseconds(100))
    await shell.delay(.milliseconds(100), "B")
    await clock.advance(by: .milliseconds(99))
    #expect(ran.all.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.all == ["B"])
    await clock.advance(by: .seconds(1))
    #expect(ran.all == ["B"])
  }

  @Test(arguments: ShellKind.single)
  func taskNilReusesTaskGivenLastAndShellIsReusable(_ kind: ShellKind) async {
    let shell = kind.make(clock: clock, initialTask: "init", ran: ran)
    await shell.delay(.milliseconds(100))
    await clock.advance(by: .milliseconds(100))
    await shell.delay(.milliseconds(100), "B")
    await clock.advance(by: .milliseconds(100))
    await shell.delay(.milliseconds(100))
    await clock.advance(by: .milliseconds(100))
    #expect(ran.all == ["init", "B", "B"])
  }

  @Test(arguments: ShellKind.single)
  func noTaskEverGivenResolvesCancelledAtOnce(_ kind: ShellKind) async {
    let shell = make(kind)
    #expect(await shell.delay(.milliseconds(100)).outcome == .cancelled)
    #expect(await !shell.isPending)
    #expect(clock.pendingTimerCount == 0)
  }

  /// After `cancel()`, a `delay` starts fresh from now and no old timer affects it.
  @Test(arguments: ShellKind.allCases)
  func cancelThenDelayStartsFresh(_ kind: ShellKind) async {
    let shell = make(kind)
    let cancelled = await shell.delay(.seconds(1), "A")
    await clock.advance(by: .milliseconds(500))
    await shell.cancel()
    #expect(await cancelled.outcome == .cancelled)
    await shell.delay(.milliseconds(200), "B")
    await clock.advance(by: .milliseconds(199))
    #expect(ran.all.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.all == ["B"])
    await clock.advance(by: .seconds(2))
    #expect(ran.all == ["B"])
  }

  /// Submissions move the deadline of one timer instead of arming one each.
  @Test(arguments: ShellKind.allCases)
  func manySubmissionsArmOneTimer(_ kind: ShellKind) async {
    let shell = make(kind)
    for index in 0..<10_000 {
      await shell.delay(.milliseconds(1_000 + index / 100), "last")
    }
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .seconds(2))
    #expect(ran.all == ["last"])
    #expect(clock.pendingTimerCount == 0)
  }

  /// A loop of `delay` and `cancel` keeps one timer in flight, which the next burst adopts.
  @Test(arguments: ShellKind.allCases)
  func delayCancelLoopKeepsOneTimerInFlight(_ kind: ShellKind) async {
    let shell = make(kind)
    for _ in 0..<1_000 {
      await shell.delay(.seconds(1), "cancelled")
      await shell.cancel()
    }
    #expect(clock.pendingTimerCount == 1)
    await clock.advance(by: .milliseconds(500))
    await shell.delay(.seconds(1), "kept")
    await clock.advance(by: .milliseconds(999))
    #expect(ran.all.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(ran.all == ["kept"])
  }

  /// Constant preemption cannot starve the task when `maxWait` is set.
  @Test(arguments: ShellKind.allCases)
  func maxWaitRunsTaskDespiteConstantPreemption(_ kind: ShellKind) async {
    let shell = make(kind, DelayOptions(maxWait: .seconds(1)))
    for _ in 0..<10 {
      await shell.delay(.milliseconds(200), "A")
      await clock.advance(by: .milliseconds(100))
    }
    #expect(ran.all == ["A"])
  }

  @Test(arguments: ShellKind.allCases)
  func leadingRunsAtOnceThenOneTrailingRun(_ kind: ShellKind) async {
    let shell = make(kind, DelayOptions(leading: true))
    #expect(await shell.delay(.milliseconds(100), "A").outcome == .executed)
    #expect(ran.all == ["A"])
    let middle = await shell.delay(.milliseconds(100), "B")
    let last = await shell.delay(.milliseconds(100), "C")
    await clock.advance(by: .milliseconds(100))
    #expect(ran.all == ["A", "C"])
    #expect(await middle.outcome == .preempted)
    #expect(await last.outcome == .executed)
  }

  @Test(arguments: ShellKind.allCases)
  func flushRunsPendingTaskAndEndsBurst(_ kind: ShellKind) async {
    let shell = make(kind)
    let ticket = await shell.delay(.seconds(10), "A")
    await shell.flush()
    #expect(ran.all == ["A"])
    #expect(await !shell.isPending)
    #expect(await ticket.outcome == .executed)
    await clock.advance(by: .seconds(20))
    #expect(ran.all == ["A"])
  }

  @Test(arguments: ShellKind.allCases)
  func flushWhenIdleDoesNothing(_ kind: ShellKind) async {
    let shell = kind.make(clock: clock, initialTask: "A", ran: ran)
    await shell.flush()
    await shell.wait()
    #expect(ran.all.isEmpty)
  }

  @Test(arguments: ShellKind.allCases)
  func ticketsReportPreemptionAsSoonAsReplaced(_ kind: ShellKind) async {
    let shell = make(kind)
    let first = await shell.delay(.seconds(10), "A")
    let waiter = Task { await first.outcome }
    // Let the waiter suspend on the ticket before the replacement, in most interleavings.
    for _ in 0..<100 { await Task.yield() }
    await shell.delay(.seconds(10), "B")
    #expect(await waiter.value == .preempted)
    #expect(await shell.isPending)
    await shell.cancel()
  }

  @Test(arguments: ShellKind.allCases)
  func waitReturnsOnceBurstAndRunAreOver(_ kind: ShellKind) async {
    let shell = make(kind)
    let ticket = await shell.delay(.milliseconds(100), "A")
    let waiting = Task { await shell.wait() }
    await clock.advance(by: .milliseconds(100))
    await waiting.value
    #expect(await !shell.isPending)
    #expect(await ticket.outcome == .executed)
  }

  /// One rule for `cancelsRunningTask`, on both actors: a new burst makes every unfinished run
  /// of earlier bursts stale, the running one (cancelled) and a flushed one still queued behind
  /// it (it starts cancelled), as a search-as-you-type user expects; the new burst's own run is
  /// never cancelled. Without the option, nothing is.
  @Test(arguments: ShellKind.actors, [true, false])
  func newBurstCancelsEveryUnfinishedRunOfEarlierBursts(_ kind: ShellKind, cancels: Bool) async {
    let started = AsyncGate()
    let release = AsyncGate()
    let log = Recorder<String>()
    let shell = kind.make(clock: clock, cancelsRunningTask: cancels, ran: ran) { name in
      if name == "A" {
        started.open()
        await release.wait()
      }
      log.append("\(name) cancelled: \(Task.isCancelled)")
    }
    await shell.delay(.zero, "A")
    let firing = Task { await clock.advance(by: .zero) }
    await started.wait()
    await shell.delay(.seconds(1), "B")
    let flushing = Task { await shell.flush() }
    while await shell.isPending { await Task.yield() }
    // B's run is decided and queued behind A's; C starts a new burst.
    let last = await shell.delay(.seconds(1), "C")
    release.open()
    await firing.value
    await flushing.value
    await clock.advance(by: .seconds(1))
    await shell.wait()
    #expect(
      log.all == ["A cancelled: \(cancels)", "B cancelled: \(cancels)", "C cancelled: false"])
    #expect(await last.outcome == .executed)
  }

  /// `maxSubmissions`: the burst that reaches it runs at once, and the next submission starts a
  /// new burst.
  @Test(arguments: ShellKind.allCases)
  func maxSubmissionsRunsTheBurstAtOnce(_ kind: ShellKind) async {
    let shell = make(kind, DelayOptions(maxSubmissions: 3))
    let first = await shell.delay(.seconds(10), "A")
    await shell.delay(.seconds(10), "B")
    let third = await shell.delay(.seconds(10), "C")
    #expect(await third.outcome == .executed)
    #expect(await first.outcome == .preempted)
    #expect(ran.all == ["C"])
    #expect(await !shell.isPending)
    await shell.delay(.seconds(10), "D")
    #expect(await shell.isPending)
    await clock.advance(by: .seconds(10))
    #expect(ran.all == ["C", "D"])
  }

  /// With `leading`, the leading submission counts towards `maxSubmissions`.
  @Test(arguments: ShellKind.allCases)
  func maxSubmissionsCountsTheLeadingSubmission(_ kind: ShellKind) async {
    let shell = make(kind, DelayOptions(leading: true, maxSubmissions: 2))
    #expect(await shell.delay(.seconds(10), "A").outcome == .executed)
    #expect(await shell.delay(.seconds(10), "B").outcome == .executed)
    #expect(ran.all == ["A", "B"])
    #expect(await !shell.isPending)
    let single = kind.make(
      clock: clock, options: DelayOptions(leading: true, maxSubmissions: 1), ran: ran)
    #expect(await single.delay(.seconds(10), "C").outcome == .executed)
    #expect(await !single.isPending)
    await clock.advance(by: .seconds(10))
    #expect(ran.all == ["A", "B", "C"])
  }

  /// With `maxWait`, whichever comes first ends the burst.
  @Test(arguments: ShellKind.allCases)
  func maxSubmissionsOrMaxWaitWhicheverComesFirst(_ kind: ShellKind) async {
    let shell = make(kind, DelayOptions(maxWait: .seconds(1), maxSubmissions: 4))
    for name in ["A", "B", "C"] {
      await shell.delay(.milliseconds(500), name)
      await clock.advance(by: .milliseconds(400))
    }
    #expect(ran.all == ["C"])  // maxWait at 1.0 s, before a fourth submission
    for name in ["D", "E", "F", "G"] { await shell.delay(.milliseconds(500), name) }
    await shell.wait()
    #expect(ran.all == ["C", "G"])  // four submissions at 1.2 s, before maxWait
  }

  /// Rule 6: a pending timer does not keep the queue or actor alive, and releasing the last
  /// reference cancels the burst and frees the task.
  @Test(arguments: ShellKind.single)
  func releaseCancelsPendingBurstAndFreesTask(_ kind: ShellKind) async {
    final class Captured: Sendable {}
    weak var weakInstance: AnyObject?
    weak var weakCaptured: Captured?
    var ticket: DelayTicket?
    do {
      let captured = Captured()
      weakCaptured = captured
      switch kind {
      case .queue:
        let queue = DelayedPreemptiveDispatchQueue(clock: clock)
        weakInstance = queue
        ticket = queue.delay(1) { [ran] in ran.append("ran \(captured)") }
      case .actor:
        let actor = DelayedPreemptiveActor(clock: clock)
        weakInstance = actor
        ticket = await actor.delay(.seconds(1)) { [ran] in ran.append("ran \(captured)") }
      case .keyedQueue, .keyedActor:
        Issue.record("\(kind) has no task to free")
      }
    }
    #expect(weakInstance == nil)
    #expect(weakCaptured == nil)
    #expect(await ticket?.outcome == .cancelled)
    await clock.advance(by: .seconds(2))
    #expect(ran.all.isEmpty)
  }
}
