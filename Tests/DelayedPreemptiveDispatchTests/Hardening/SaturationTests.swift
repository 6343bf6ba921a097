import DelayedPreemptiveDispatchTesting
import Dispatch
import Foundation
import Testing

@testable import DelayedPreemptiveDispatch

/// Durations too large for `Int64` seconds saturate to "never, unless
/// flushed" everywhere a `Duration` enters the library, instead of trapping in
/// `Duration.components`.
@Suite struct SaturationTests {
  /// 1e19 seconds: more seconds than `Int64` holds.
  static let huge = Duration.seconds(1e19)
  /// A century: far beyond any real deadline, well inside a time line.
  static let century = Duration.seconds(100 * 365 * 86_400)

  let clock = ManualClock()
  let log = Recorder<String>()

  @Test func hugeDelayOnQueueRunsOnlyWhenFlushed() async {
    let queue = DelayedPreemptiveDispatchQueue(clock: clock)
    let ticket = queue.delay(for: Self.huge) { [log] in log.append("ran") }
    await clock.advance(by: Self.century)
    #expect(log.elements.isEmpty)
    #expect(queue.isPending)
    queue.flush()
    #expect(await ticket.outcome == .executed)
    #expect(log.elements == ["ran"])
  }

  @Test func hugeDelayOnActorRunsOnlyWhenFlushed() async {
    let actor = DelayedPreemptiveActor(clock: clock)
    let ticket = await actor.delay(Self.huge) { [log] in log.append("ran") }
    await clock.advance(by: Self.century)
    #expect(log.elements.isEmpty)
    #expect(await actor.isPending)
    await actor.flush()
    #expect(await ticket.outcome == .executed)
    #expect(log.elements == ["ran"])
  }

  @Test func hugeMaxWaitNeverCutsABurstShort() async {
    let options = DelayOptions(maxWait: Self.huge)
    let queue = DelayedPreemptiveDispatchQueue(clock: clock, options: options)
    let actor = DelayedPreemptiveActor(clock: clock, options: options)
    queue.delay(for: .seconds(2)) { [log] in log.append("queue") }
    await actor.delay(.seconds(2)) { [log] in log.append("actor") }
    await clock.advance(by: .seconds(1))
    #expect(log.elements.isEmpty)
    await clock.advance(by: .seconds(1))
    #expect(Set(log.elements) == ["queue", "actor"])
    // A burst that never goes quiet is not cut short either; only a flush ends it.
    let ticket = queue.delay(for: Self.huge) { [log] in log.append("flushed") }
    await clock.advance(by: Self.century)
    #expect(log.count == 2)
    queue.flush()
    #expect(await ticket.outcome == .executed)
  }

  @Test func hugeToleranceWithRestartStillRuns() async {
    let options = DelayOptions(deadlinePolicy: .restart, tolerance: Self.huge)
    let queue = DelayedPreemptiveDispatchQueue(clock: clock, options: options)
    let actor = DelayedPreemptiveActor(clock: clock, options: options)
    queue.delay(for: .seconds(10)) { [log] in log.append("queue stale") }
    queue.delay(for: .seconds(1)) { [log] in log.append("queue") }
    await actor.delay(.seconds(10)) { [log] in log.append("actor stale") }
    await actor.delay(.seconds(1)) { [log] in log.append("actor") }
    await clock.advance(by: .seconds(10))
    #expect(Set(log.elements) == ["queue", "actor"])
  }

  @Test func hugeDurationsGivenToAdaptersMeanNever() async {
    let callbacks = DispatchQueue(label: "SaturationTests.callbacks")
    let signal = AllResourcesLoadedSignal(
      quietPeriod: Self.huge, maxWait: Self.huge, clock: clock, callbackQueue: callbacks
    ) { [log] count in log.append("loaded \(count)") }
    let pan = PanSettleDetector(
      settleDelay: Self.huge, maxWait: Self.huge, clock: clock, callbackQueue: callbacks
    ) { [log] in log.append("settled") }
    let lockout = PasscodeLockout(
      maxFailures: 1, window: Self.huge, lockoutDuration: Self.huge, clock: clock,
      callbackQueue: callbacks)
    signal.resourceDidLoad()
    pan.panDidBegin()
    pan.panDidStop()
    #expect(lockout.recordFailure() == .lockedOut)
    await clock.advance(by: Self.century)
    await withCheckedContinuation { continuation in callbacks.async { continuation.resume() } }
    #expect(log.elements.isEmpty)
    #expect(signal.loadedCount == 1)
    #expect(!pan.isSettled)
    #expect(lockout.state == .lockedOut)
    #expect((lockout.remainingLockout ?? .zero) > Self.century)
    let snapshot = lockout.snapshot(now: Date(timeIntervalSinceReferenceDate: 0))
    #expect((snapshot.lockedOutUntil?.timeIntervalSinceReferenceDate ?? 0) > 1e18)
  }

  @Test func manualClockAdvancedPastInt64MaxSecondsRunsNothingUntilFlushed() async {
    let queue = DelayedPreemptiveDispatchQueue(clock: clock)
    let actor = DelayedPreemptiveActor(clock: clock)
    let queueTicket = queue.delay(for: Self.huge) { [log] in log.append("queue") }
    let actorTicket = await actor.delay(Self.huge) { [log] in log.append("actor") }
    await clock.advance(by: Self.huge)
    await clock.advance(by: Self.huge)
    #expect(clock.now.offset == Self.huge * 2)
    #expect(log.elements.isEmpty)
    queue.flush()
    await actor.flush()
    #expect(await queueTicket.outcome == .executed)
    #expect(await actorTicket.outcome == .executed)
    #expect(Set(log.elements) == ["queue", "actor"])
  }

  @Test(arguments: [
    (Duration.seconds(1e19), Int64.max), (.seconds(-1e19), Int64.min),
    (.nanoseconds(Int64.max), Int64.max), (.nanoseconds(Int64.min), Int64.min),
    (.nanoseconds(Int64.max - 1), Int64.max - 1), (.nanoseconds(Int64.min + 1), Int64.min + 1),
    (.seconds(1.5), 1_500_000_000), (.seconds(-1.5), -1_500_000_000), (.zero, 0),
    (.nanoseconds(-1) / 3, 0), (.nanoseconds(-7) / 2, -3), (.nanoseconds(7) / 2, 3),
  ])
  func saturatingNanosecondsClampsEveryDuration(duration: Duration, expected: Int64) {
    #expect(duration.saturatingNanoseconds == expected)
    // The path of systems without `Duration.attoseconds` (Apple systems before 2024).
    #expect(duration.saturatingNanosecondsFromComponents == expected)
  }
}
