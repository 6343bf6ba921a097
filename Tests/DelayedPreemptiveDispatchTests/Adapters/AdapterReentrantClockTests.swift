import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// A `ManualClock` that runs a hook each time it is read or asked to schedule, as a clock that
/// logs or counts through the app might: the hook reaches back into the adapters on it.
final class ReentrantClock: Clock, SchedulingClock, Sendable {
  typealias Instant = ManualClock.Instant

  let base = ManualClock()
  private let hook = LockBox<(@Sendable () -> Void)?>(nil)

  var now: Instant {
    hook.withLock { $0 }?()
    return base.now
  }

  var minimumResolution: Duration { .zero }

  func onUse(_ body: @escaping @Sendable () -> Void) {
    hook.withLock { $0 = body }
  }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    try await base.sleep(until: deadline, tolerance: tolerance)
  }

  func schedule(
    after delay: Duration, tolerance: Duration?, action: @escaping @Sendable () async -> Void
  ) {
    hook.withLock { $0 }?()
    base.schedule(after: delay, tolerance: tolerance, action: action)
  }
}

/// An adapter reads and schedules on its clock only outside its own lock: a clock that reads the
/// adapter then works. With a reading or a timer armed under the adapter's lock, the hook below
/// would wait for that lock forever.
@Suite("Adapter clocks that call back")
struct AdapterReentrantClockTests {
  @Test func clockThatReadsItsAdaptersWhenUsedDoesNotDeadlock() async {
    let clock = ReentrantClock()
    let drain = CallbackDrain()
    let changes = Recorder<PasscodeLockout.State>()
    let settles = Recorder<Duration>()
    let batches = Recorder<Int>()
    let lockout = PasscodeLockout(
      maxFailures: 2, window: .seconds(10), lockoutDuration: .seconds(30), clock: clock,
      callbackQueue: drain.queue
    ) { changes.append($0) }
    let detector = PanSettleDetector(
      settleDelay: .seconds(1), maxWait: .seconds(2), clock: clock, callbackQueue: drain.queue
    ) { settles.append(clock.base.now.offset) }
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .seconds(1), maxWait: .seconds(2), clock: clock, callbackQueue: drain.queue
    ) { batches.append($0) }
    let reads = Recorder<Bool>()
    clock.onUse { [weak lockout, weak detector, weak signal] in
      guard let lockout, let detector, let signal else { return }
      _ = (lockout.state, detector.isSettled, signal.loadedCount)
      reads.append(true)
    }
    lockout.recordFailure()
    detector.panDidBegin()
    signal.resourceDidLoad()
    await clock.base.advance(by: .milliseconds(500))
    lockout.recordFailure()
    detector.panDidStop()
    signal.resourceDidLoad()
    await clock.base.advance(by: .seconds(30))
    await drain.drain()
    #expect(changes.all == [.open(failures: 1), .lockedOut, .open(failures: 0)])
    #expect(settles.all == [.milliseconds(1500)])
    #expect(batches.all == [2])
    #expect(!reads.all.isEmpty)
  }
}
