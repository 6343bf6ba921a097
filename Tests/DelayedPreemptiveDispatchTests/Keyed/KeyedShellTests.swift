import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// Both keyed types on `ManualClock`: the K rules, many keys in one advance, release with
/// pending keys, and tasks that submit to their own key. No test sleeps.
@Suite struct KeyedShellTests {
  enum Shell: String, CaseIterable, Sendable {
    case queue, actor
  }

  /// One interface over both keyed types, so that each behaviour is written once.
  final class Keyed: Sendable {
    let queue: KeyedDelayedPreemptiveDispatchQueue<Int, String>?
    let actor: KeyedDelayedPreemptiveActor<Int, String, ManualClock>?

    init(
      _ shell: Shell, clock: ManualClock, options: DelayOptions = DelayOptions(),
      maxConcurrentTasks: Int? = nil, task: @escaping @Sendable (Int, String) -> Void
    ) {
      switch shell {
      case .queue:
        queue = KeyedDelayedPreemptiveDispatchQueue(
          clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks, task: task)
        actor = nil
      case .actor:
        queue = nil
        actor = KeyedDelayedPreemptiveActor(
          clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks, task: task)
      }
    }

    @discardableResult
    func delay(_ key: Int, _ milliseconds: Int64, _ value: String) async -> DelayTicket {
      if let queue { return queue.delay(key, for: .milliseconds(milliseconds), value: value) }
      return await actor!.delay(key, for: .milliseconds(milliseconds), value: value)
    }

    func cancel(_ key: Int) async {
      if let queue { queue.cancel(key) } else { await actor!.cancel(key) }
    }

    /// Flushes the key; the queue's flush returns at once, the actor's once the task returned.
    func flush(_ key: Int) async {
      if let queue { queue.flush(key) } else { await actor!.flush(key) }
    }

    func cancelAll() async {
      if let queue { queue.cancelAll() } else { await actor!.cancelAll() }
    }

    func flushAllAndWait() async {
      if let queue {
        queue.flushAll()
        queue.wait()
      } else {
        await actor!.flushAll()
        await actor!.wait()
      }
    }

    func pendingCount() async -> Int {
      if let queue { return queue.pendingCount }
      return await actor!.pendingCount
    }

    func footprint() async -> (keys: Int, timers: Int) {
      if let queue { return queue.footprint }
      return await actor!.footprint
    }
  }

  let clock = ManualClock()
  let log = Recorder<String>()

  func makeKeyed(
    _ shell: Shell, options: DelayOptions = DelayOptions(), maxConcurrentTasks: Int? = nil
  ) -> Keyed {
    Keyed(shell, clock: clock, options: options, maxConcurrentTasks: maxConcurrentTasks) {
      [log] key, value in log.append("\(key)=\(value)")
    }
  }

  @Test(arguments: Shell.allCases)
  func eachKeyRunsOnceWithItsLastValueAtItsOwnDeadline(shell: Shell) async {
    let keyed = makeKeyed(shell)
    let first = await keyed.delay(1, 300, "a")
    let last = await keyed.delay(1, 300, "b")
    await keyed.delay(2, 100, "x")
    await clock.advance(by: .milliseconds(100))
    #expect(log.all == ["2=x"])
    await clock.advance(by: .milliseconds(199))
    #expect(log.all == ["2=x"])
    await clock.advance(by: .milliseconds(1))
    #expect(log.all == ["2=x", "1=b"])
    #expect(await first.outcome == .preempted)
    #expect(await last.outcome == .executed)
    #expect(await keyed.footprint() == (0, 0))
  }

  @Test(arguments: Shell.allCases)
  func submissionForOneKeyNeverCancelsOrFlushesAnother(shell: Shell) async {
    let keyed = makeKeyed(shell)
    let cancelled = await keyed.delay(1, 100, "a")
    let kept = await keyed.delay(2, 100, "b")
    let flushed = await keyed.delay(3, 500, "c")
    await keyed.cancel(1)
    await keyed.flush(3)
    #expect(await flushed.outcome == .executed)
    #expect(log.all == ["3=c"])
    #expect(await keyed.pendingCount() == 1)
    await clock.advance(by: .milliseconds(100))
    #expect(log.all == ["3=c", "2=b"])
    #expect(await cancelled.outcome == .cancelled)
    #expect(await kept.outcome == .executed)
    #expect(await flushed.outcome == .executed)
  }

  @Test(arguments: Shell.allCases)
  func tenThousandKeysRunOnceInOneAdvanceAndLeaveNothing(shell: Shell) async {
    let counter = LockBox([Int: Int]())
    let keyed = Keyed(shell, clock: clock) { key, _ in counter.withLock { $0[key, default: 0] += 1 }
    }
    // 1 to 50 ms: a zero delay would be due, and run, at its submission (T5).
    for key in 0..<10_000 { await keyed.delay(key, Int64(key % 50) + 1, "v") }
    for key in 0..<10_000 where key % 3 == 0 { await keyed.delay(key, 10, "w") }
    #expect(await keyed.pendingCount() == 10_000)
    await clock.advance(by: .milliseconds(100))
    #expect(counter.withLock { $0.count } == 10_000)
    #expect(counter.withLock { $0.values.allSatisfy { $0 == 1 } })
    #expect(await keyed.footprint() == (0, 0))
    #expect(clock.pendingTimerCount <= 1)
  }

  @Test(arguments: Shell.allCases)
  func flushAllThenWaitLosesNothing(shell: Shell) async {
    let keyed = makeKeyed(shell)
    for key in 0..<100 { await keyed.delay(key, 60_000, "v\(key)") }
    await keyed.flushAllAndWait()
    #expect(log.count == 100)
    #expect(Set(log.all).count == 100)
    #expect(await keyed.pendingCount() == 0)
  }

  @Test(arguments: Shell.allCases)
  func cancelAllCancelsEveryPendingKeyAndALaterDelayStartsFresh(shell: Shell) async {
    let keyed = makeKeyed(shell)
    var tickets: [DelayTicket] = []
    for key in 0..<20 { tickets.append(await keyed.delay(key, 100, "old")) }
    await keyed.cancelAll()
    #expect(await keyed.pendingCount() == 0)
    for ticket in tickets { #expect(await ticket.outcome == .cancelled) }
    let fresh = await keyed.delay(3, 50, "new")
    await clock.advance(by: .milliseconds(100))
    #expect(log.all == ["3=new"])
    #expect(await fresh.outcome == .executed)
    #expect(await keyed.footprint() == (0, 0))
  }

  @Test(arguments: Shell.allCases)
  func maxConcurrentTasksBoundsRunningTasks(shell: Shell) async {
    let active = LockBox((now: 0, most: 0))
    let keyed = Keyed(shell, clock: clock, maxConcurrentTasks: 2) { _, _ in
      active.withLock {
        $0.now += 1
        $0.most = max($0.most, $0.now)
      }
      for _ in 0..<2_000 { _ = active.withLock { $0.now } }
      active.withLock { $0.now -= 1 }
    }
    for key in 0..<200 { await keyed.delay(key, 10, "v") }
    await clock.advance(by: .milliseconds(10))
    #expect(active.withLock { $0.most } <= 2)
    #expect(active.withLock { $0.now } == 0)
  }

  @Test func queueTaskSubmittingToItsOwnKeyStartsNewBurstAfterItReturns() async {
    let reference = LockBox<KeyedDelayedPreemptiveDispatchQueue<Int, Int>?>(nil)
    let keyed = KeyedDelayedPreemptiveDispatchQueue<Int, Int>(clock: clock) { [log] key, round in
      log.append("\(key)#\(round)")
      if round < 3 { reference.withLock { $0 }?.delay(key, for: .zero, value: round + 1) }
    }
    reference.withLock { $0 = keyed }
    keyed.delay(7, for: .milliseconds(5), value: 1)
    await clock.advance(by: .milliseconds(5))
    await clock.advance(by: .zero)
    await clock.advance(by: .zero)
    #expect(log.all == ["7#1", "7#2", "7#3"])
    reference.withLock { $0 = nil }
  }

  @Test func actorTaskSubmittingToItsOwnKeyStartsNewBurstAfterItReturns() async {
    let reference = WeakReference<KeyedDelayedPreemptiveActor<Int, Int, ManualClock>>()
    let keyed = KeyedDelayedPreemptiveActor<Int, Int, ManualClock>(clock: clock) {
      [log] key, round in
      log.append("\(key)#\(round)")
      if round < 3 { await reference.object?.delay(key, for: .zero, value: round + 1) }
    }
    reference.object = keyed
    await keyed.delay(7, for: .milliseconds(5), value: 1)
    await clock.advance(by: .milliseconds(5))
    await clock.advance(by: .zero)
    await clock.advance(by: .zero)
    #expect(log.all == ["7#1", "7#2", "7#3"])
  }

  @Test func releasingQueueWithPendingKeysCancelsThemAndFreesIt() async {
    var keyed: KeyedDelayedPreemptiveDispatchQueue<Int, String>? =
      KeyedDelayedPreemptiveDispatchQueue(
        clock: clock
      ) { [log] key, _ in log.append("\(key)") }
    let tickets = (0..<10).map { keyed!.delay($0, for: .seconds(1), value: "v") }
    weak let released = keyed
    keyed = nil
    #expect(released == nil)
    for ticket in tickets { #expect(await ticket.outcome == .cancelled) }
    await clock.advance(by: .seconds(2))
    #expect(log.all.isEmpty)
  }

  @Test func releasingActorWithPendingKeysCancelsThemAndFreesIt() async {
    var keyed: KeyedDelayedPreemptiveActor<Int, String, ManualClock>? =
      KeyedDelayedPreemptiveActor(clock: clock) { [log] key, _ in log.append("\(key)") }
    var tickets: [DelayTicket] = []
    for key in 0..<10 { tickets.append(await keyed!.delay(key, for: .seconds(1), value: "v")) }
    weak let released = keyed
    keyed = nil
    #expect(released == nil)
    for ticket in tickets { #expect(await ticket.outcome == .cancelled) }
    await clock.advance(by: .seconds(2))
    #expect(log.all.isEmpty)
  }

  /// `cancelsRunningTask` acts per key: a new burst of key 1 cancels key 1's running task, and
  /// key 2's task, running at the same time, goes on.
  @Test func keyedActorCancelsOnlyThatKeysStaleRuns() async {
    let started = Recorder<Int>()
    let release = AsyncGate()
    let keyed = KeyedDelayedPreemptiveActor<Int, String, ManualClock>(
      clock: clock, maxConcurrentTasks: 2, cancelsRunningTask: true
    ) { [log] key, value in
      if value == "slow" {
        started.append(key)
        await release.wait()
      }
      log.append("\(key)=\(value) cancelled: \(Task.isCancelled)")
    }
    await keyed.delay(1, for: .zero, value: "slow")
    await keyed.delay(2, for: .zero, value: "slow")
    let advancing = Task { await clock.advance(by: .zero) }
    while started.count < 2 { await Task.yield() }
    await keyed.delay(1, for: .seconds(1), value: "new")
    release.open()
    await advancing.value
    await clock.advance(by: .seconds(1))
    await keyed.wait()
    #expect(
      Set(log.all) == [
        "1=slow cancelled: true", "2=slow cancelled: false", "1=new cancelled: false",
      ])
  }
}
