import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// Events from many threads while the clock fires the adapters' timers: an adapter arms its timer
/// only after its lock, yet no event is lost or counted twice, no callback is lost or
/// duplicated, and the callbacks report the changes in order. Run under `--sanitize=thread` in
/// CI.
@Suite("Adapter storms racing firings", .serialized)
struct AdapterStormTests {
  static let threads = 4
  static let eventsPerThread = 2_000
  let clock = ManualClock()
  let drain = CallbackDrain()

  /// Runs `event` `eventsPerThread` times on each of `threads` dispatch threads, while the
  /// clock advances by `step`, so that events race the timers' firings.
  func storm(step: Duration, _ event: @escaping @Sendable () -> Void) async {
    let phase = LockBox(Phase.starting)
    let advances = AdvanceCount()
    DispatchQueue(label: "AdapterStormTests.events").async {
      phase.withLock { $0 = .running }
      DispatchQueue.concurrentPerform(iterations: Self.threads) { _ in
        var seen = 0
        for index in 0..<Self.eventsPerThread {
          event()
          // Every 16 events, wait for the clock's next advance, so that the storm spans many
          // firings (at least eventsPerThread / 16 of them).
          if index % 16 == 0 { seen = advances.wait(after: seen) }
        }
      }
      phase.withLock { $0 = .done }
    }
    var current = Phase.starting
    while current != .done {
      if current == .running {
        await clock.advance(by: step)
        advances.advanced()
      }
      // An advance with nothing due never suspends: let other tasks run.
      await Task.yield()
      current = phase.withLock { $0 }
    }
  }

  enum Phase {
    case starting, running, done
  }

  @Test func loadsRacingFiringsAreEachSignalledInExactlyOneBatch() async {
    let batches = Recorder<Int>()
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(2), maxWait: .milliseconds(5), clock: clock,
      callbackQueue: drain.queue
    ) { batches.append($0) }
    await storm(step: .milliseconds(1)) { signal.resourceDidLoad() }
    await clock.advance(by: .milliseconds(5))
    await drain.drain()
    #expect(batches.all.reduce(0, +) == Self.threads * Self.eventsPerThread)
    #expect(batches.all.allSatisfy { $0 > 0 })
    #expect(signal.loadedCount == 0)
    // Nothing is left pending: one more load is one more batch, of one.
    let before = batches.count
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(10))
    #expect(batches.all.dropFirst(before) == [1])
  }

  @Test func panEventsRacingFiringsLeaveOneSettlePerRound() async {
    let settles = Recorder<Duration>()
    let detector = PanSettleDetector(
      settleDelay: .milliseconds(2), maxWait: .milliseconds(5), clock: clock,
      callbackQueue: drain.queue
    ) { [clock] in settles.append(clock.now.offset) }
    await storm(step: .milliseconds(1)) {
      detector.panDidBegin()
      detector.panDidStop()
    }
    await clock.advance(by: .milliseconds(5))
    await drain.drain()
    #expect(detector.isSettled)
    #expect(!settles.all.isEmpty)
    // No timer of the storm is left: one more pan settles once, `settleDelay` after its stop.
    let before = settles.count
    let stop = clock.now.offset
    detector.panDidBegin()
    detector.panDidStop()
    await clock.advance(by: .milliseconds(10))
    #expect(settles.all.dropFirst(before) == [stop + .milliseconds(2)])
  }

  @Test func failuresRacingWindowsAndLockoutsAreReportedInOrder() async {
    let changes = Recorder<PasscodeLockout.State>()
    let lockout = PasscodeLockout(
      maxFailures: 4, window: .milliseconds(3), lockoutDuration: .milliseconds(5), clock: clock,
      callbackQueue: drain.queue
    ) { changes.append($0) }
    await storm(step: .milliseconds(1)) { lockout.recordFailure() }
    await clock.advance(by: .milliseconds(5))
    await drain.drain()
    #expect(lockout.state == .open(failures: 0))
    let reports = changes.all
    #expect(reports.last == .open(failures: 0))
    #expect(reports.contains(.lockedOut))
    // Each report follows from the one before it, as the rules allow.
    for (before, after) in zip([.open(failures: 0)] + reports, reports) {
      #expect(Self.follows(after, before, maxFailures: 4), "\(before) then \(after)")
    }
  }

  /// Whether `lockout` may report `after` right after `before`: one more failure, the window
  /// passing, a lockout, or its end.
  static func follows(
    _ after: PasscodeLockout.State, _ before: PasscodeLockout.State, maxFailures: Int
  ) -> Bool {
    switch (before, after) {
    case (.open(let counted), .open(let failures)):
      return failures == counted + 1 || (failures == 0 && counted > 0)
    case (.open(let counted), .lockedOut):
      return counted == maxFailures - 1
    case (.lockedOut, .open(let failures)):
      return failures == 0
    case (.lockedOut, .lockedOut):
      return false
    }
  }
}

/// Counts the clock's advances during a storm, so that an event thread can wait for the next
/// one instead of sleeping. Only the storm's dispatch threads block in ``wait(after:)``, never
/// a cooperative thread: the advancing task keeps running.
final class AdvanceCount: Sendable {
  private struct State: Sendable {
    var count = 0
    var waiters: [DispatchSemaphore] = []
  }

  private let state = LockBox(State())

  /// The clock advanced once more: wakes every waiting thread.
  func advanced() {
    let waiters = state.withLock { state in
      state.count += 1
      return state.waiters.take()
    }
    for waiter in waiters { waiter.signal() }
  }

  /// Blocks until the clock has advanced more than `seen` times; returns how many times it has.
  func wait(after seen: Int) -> Int {
    let semaphore = DispatchSemaphore(value: 0)
    let count: Int? = state.withLock { state in
      if state.count > seen { return state.count }
      state.waiters.append(semaphore)
      return nil
    }
    if let count { return count }
    semaphore.wait()
    return state.withLock { $0.count }
  }
}
