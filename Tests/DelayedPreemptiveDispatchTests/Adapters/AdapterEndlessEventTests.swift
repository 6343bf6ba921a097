import DPDHeapStatistics
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// Events that never pause, from two threads of their own, while the test advances a `ManualClock`
/// 1 ms at a time (issue 39, part 2): every `advance` returns, and batches, settles and lockouts
/// still end at least once per `maxWait` (or lockout). A firing and the events around it are
/// decided under one lock, so no firing is left to perform what events keep deciding.
@Suite("Adapter events that never pause", .serialized, .timeLimit(.minutes(1)))
struct AdapterEndlessEventTests {
  /// 100 ms of clock: each test takes a few seconds alone. In full parallel runs on a loaded
  /// 2-core machine the signal's test, which starts with the CPU-bound suites, took 56 s with 300
  /// advances and 58-67 s with 150, against a limit of 60 s: the wait for Swift concurrency's
  /// threads, not the advances, takes that time.
  static let advances = 100
  let clock = ManualClock()

  /// Runs `event` without pause on two threads of their own while the clock advances `advances`
  /// times by 1 ms: the events go on through every advance, and each instant between two
  /// advances gets at least 64 of them before the next, without a sleep. Between advances, once
  /// it has them, the threads rest until the next advance starts, so that they do not take the
  /// CPU that other suites, and this test's own advances, need on a 2-core machine.
  /// Returns whether every advance returned: the
  /// event threads stop by themselves once the live heap has grown by 256 MB (what an `advance`
  /// that hangs while events pile up does, at about 40 MB/s), or when no advance has returned for
  /// 45 s. So a hang fails the test, without threads that fill memory until its time limit and
  /// after. Not by a shorter wait: in a full parallel run on a loaded 2-core machine, the
  /// CPU-bound suites held Swift concurrency's threads, and so this test's advances, for more
  /// than 20 s.
  func endless(_ event: @escaping @Sendable () -> Void) async -> Bool {
    let pump = EventPump()
    pump.start(event)
    for _ in 0..<Self.advances {
      await pump.waitForEvents()
      guard !pump.gaveUp else { break }
      pump.advancing()
      await clock.advance(by: .milliseconds(1))
      pump.advanced()
    }
    pump.stop()
    return !pump.gaveUp
  }

  @Test func loadsThatNeverPauseEndABatchAtLeastOncePerMaxWait() async {
    let batches = Recorder<Int>()
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(3), maxWait: .milliseconds(5), clock: clock
    ) { batches.append($0) }
    let returned = await endless { signal.resourceDidLoad() }
    #expect(returned, "an advance did not return")
    // A batch every 5 ms is 20 in 100 ms; a tick of slack per batch leaves 16.
    #expect(batches.count >= Self.advances / 6, "\(batches.count) batches")
    #expect(batches.all.allSatisfy { $0 > 0 })
  }

  @Test func pansThatNeverPauseSettleAtLeastOncePerMaxWait() async {
    let settles = Recorder<Void>()
    let detector = PanSettleDetector(
      settleDelay: .milliseconds(3), maxWait: .milliseconds(5), clock: clock
    ) { settles.append(()) }
    let returned = await endless {
      detector.panDidBegin()
      detector.panDidStop()
    }
    #expect(returned, "an advance did not return")
    #expect(settles.count >= Self.advances / 6, "\(settles.count) settles")
  }

  @Test func failuresThatNeverPauseLeaveEveryAdvanceReturning() async {
    let changes = Recorder<PasscodeLockout.State>()
    let lockout = PasscodeLockout(
      maxFailures: 3, window: .milliseconds(3), lockoutDuration: .milliseconds(5), clock: clock
    ) { changes.append($0) }
    let returned = await endless { lockout.recordFailure() }
    #expect(returned, "an advance did not return")
    // Each lockout ends after 5 ms and the next failures lock out again: about 20 of them.
    let lockouts = changes.all.filter { $0 == .lockedOut }.count
    #expect(lockouts >= Self.advances / 10, "\(lockouts) lockouts")
  }
}

/// Threads that call an event in a tight loop until stopped, counting the events, and stop by
/// themselves when the live heap has grown by 256 MB, or the clock has not advanced for 45 s.
/// Between advances they rest once 64 events came since the last one.
final class EventPump: Sendable {
  private struct State: Sendable {
    /// Events since the last advance returned.
    var events = 0
    var isAdvancing = false
    /// Threads resting until the next advance starts.
    var resting: [DispatchSemaphore] = []
    var isStopped = false
    var gaveUp = false
    var lastAdvance = ContinuousClock.now
  }

  private static let patience = Duration.seconds(45)
  private static let heapBound = 256 << 20
  private let state = LockBox(State())
  private let baseline = Int(dpd_live_heap_bytes())
  private let threads = (0..<2).map { DispatchQueue(label: "EventPump.\($0)") }

  func start(_ event: @escaping @Sendable () -> Void) {
    for thread in threads {
      thread.async { [state, baseline] in Self.pump(event, state, baseline: baseline) }
    }
  }

  private static func pump(_ event: @Sendable () -> Void, _ state: LockBox<State>, baseline: Int) {
    var rounds = 0
    while true {
      for _ in 0..<64 { event() }
      rounds += 1
      // The heap's statistics take the allocator's locks: read them every 4,096 events.
      let grew = rounds % 64 == 0 && Int(dpd_live_heap_bytes()) - baseline > heapBound
      let (goesOn, rest) = state.withLock { state -> (Bool, DispatchSemaphore?) in
        state.events += 64
        if grew || ContinuousClock.now - state.lastAdvance > patience { state.gaveUp = true }
        guard !state.isStopped && !state.gaveUp else { return (false, nil) }
        guard !state.isAdvancing, state.events >= 64 else { return (true, nil) }
        let rest = DispatchSemaphore(value: 0)
        state.resting.append(rest)
        return (true, rest)
      }
      if !goesOn { return }
      rest?.wait()
    }
  }

  /// Returns once 64 events came since the last advance, or the pump gave up.
  func waitForEvents() async {
    while !state.withLock({ $0.events >= 64 || $0.gaveUp }) {
      await Task.yield()
    }
  }

  /// An advance starts: the resting threads go on.
  func advancing() {
    let resting = state.withLock { state in
      state.isAdvancing = true
      return state.resting.take()
    }
    for thread in resting { thread.signal() }
  }

  /// An advance returned.
  func advanced() {
    state.withLock { state in
      state.isAdvancing = false
      state.events = 0
      state.lastAdvance = .now
    }
  }

  var gaveUp: Bool { state.withLock { $0.gaveUp } }

  /// Stops the threads and returns once they have stopped.
  func stop() {
    let resting = state.withLock { state in
      state.isStopped = true
      return state.resting.take()
    }
    for thread in resting { thread.signal() }
    for thread in threads { thread.sync {} }
  }
}
