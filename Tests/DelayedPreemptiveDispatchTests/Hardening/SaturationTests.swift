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
    // The reference, through `components`.
    #expect(duration.saturatingNanosecondsFromComponents == expected)
  }

  /// The 64-bit arithmetic of `saturatingNanoseconds` against the two references, the 128-bit
  /// division of `attoseconds` and `components`: at the edges of each of its branches (the
  /// sign, the carry of the negation, the high word at 10^9, the result at `Int64`'s bounds)
  /// and for 200,000 words drawn at random, in both signs.
  @Test func saturatingNanosecondsMatchesTheReferencesEverywhere() {
    let highs: [Int64] = [
      0, 1, -1, 2, -2, 999_999_999, 1_000_000_000, 1_000_000_001, -999_999_999, -1_000_000_000,
      -1_000_000_001, 500_000_000, -500_000_000, 499_999_999, -500_000_001, Int64.max, Int64.min,
      Int64.max - 1, Int64.min + 1,
    ]
    let lows: [UInt64] = [
      0, 1, 2, 999_999_999, 1_000_000_000, 1_000_000_001, UInt64.max, UInt64.max - 1,
      UInt64(Int64.max), UInt64(Int64.max) + 1, 709_551_615, 709_551_616,
    ]
    var durations: [Duration] = []
    for high in highs {
      for low in lows { durations.append(Duration(_high: high, low: low)) }
    }
    // Around the bounds of the result: Int64.max and Int64.min nanoseconds, and one either side.
    for nanoseconds: Int64 in [.max, .min, .max - 1, .min + 1, 0, 1, -1] {
      let attoseconds = Duration.nanoseconds(nanoseconds)
      for offset: Int64 in [-1_000_000_000, -1, 0, 1, 999_999_999, 1_000_000_000] {
        durations.append(attoseconds + .nanoseconds(1) / 1_000_000_000 * offset)
      }
    }
    var random = SeededRandomNumberGenerator(seed: 0x5eed_da7a)
    for _ in 0..<200_000 {
      // The high word mostly in the range that does not saturate, where the arithmetic is.
      let high =
        random.next() % 4 == 0
        ? Int64(bitPattern: random.next())
        : Int64(bitPattern: random.next() % 2_000_000_002) - 1_000_000_001
      durations.append(Duration(_high: high, low: random.next()))
    }
    var mismatches: [Duration] = []
    for duration in durations
    where duration.saturatingNanoseconds != duration.saturatingNanosecondsFromComponents {
      mismatches.append(duration)
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(5).map { ($0._high, $0._low) })")
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
      for duration in durations.prefix(10_000) {
        #expect(
          duration.saturatingNanoseconds == Int64(clamping: duration.attoseconds / 1_000_000_000))
      }
    }
  }
}
