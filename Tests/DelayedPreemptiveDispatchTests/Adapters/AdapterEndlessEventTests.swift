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
  static let advances = 300
  let clock = ManualClock()

  /// Runs `event` without pause on two threads of their own while the clock advances `advances`
  /// times by 1 ms. Before each advance it waits for events since the previous one, so that the
  /// events span every millisecond without a sleep. Returns whether every advance returned: the
  /// event thread stops by itself when no advance has returned for 5 s (an `advance` that hangs),
  /// so that a hang fails the test without a thread that fills memory until the time limit.
  func endless(_ event: @escaping @Sendable () -> Void) async -> Bool {
    let pump = EventPump()
    pump.start(event)
    for _ in 0..<Self.advances {
      await pump.waitForEvents()
      guard !pump.gaveUp else { break }
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
    // 300 ms with a batch every 5 ms is 60 batches; a tick of slack per batch leaves 50.
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
    // Each lockout ends after 5 ms and the next failures lock out again: about 60 of them.
    let lockouts = changes.all.filter { $0 == .lockedOut }.count
    #expect(lockouts >= Self.advances / 10, "\(lockouts) lockouts")
  }
}

/// Threads that call an event in a tight loop until stopped, counting the events, and stop by
/// themselves when the clock has not advanced for 5 s.
final class EventPump: Sendable {
  private struct State: Sendable {
    var events = 0
    var seen = 0
    var isStopped = false
    var gaveUp = false
    var lastAdvance = ContinuousClock.now
  }

  private static let patience = Duration.seconds(5)
  private let state = LockBox(State())
  private let threads = (0..<2).map { DispatchQueue(label: "EventPump.\($0)") }

  func start(_ event: @escaping @Sendable () -> Void) {
    for thread in threads { thread.async { [state] in Self.pump(event, state) } }
  }

  private static func pump(_ event: @Sendable () -> Void, _ state: LockBox<State>) {
    while true {
      for _ in 0..<64 { event() }
      let goesOn = state.withLock { state in
        state.events += 64
        if ContinuousClock.now - state.lastAdvance > Self.patience { state.gaveUp = true }
        return !state.isStopped && !state.gaveUp
      }
      if !goesOn { return }
    }
  }

  /// Returns once an event came since the last call, or the pump gave up.
  func waitForEvents() async {
    while true {
      let ready = state.withLock { state in
        guard state.events == state.seen, !state.gaveUp else {
          state.seen = state.events
          return true
        }
        return false
      }
      if ready { return }
      await Task.yield()
    }
  }

  /// An advance returned.
  func advanced() {
    state.withLock { $0.lastAdvance = .now }
  }

  var gaveUp: Bool { state.withLock { $0.gaveUp } }

  /// Stops the threads and returns once they have stopped.
  func stop() {
    state.withLock { $0.isStopped = true }
    for thread in threads { thread.sync {} }
  }
}
