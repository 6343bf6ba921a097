import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// An event that lands between the clock reaching the adapter's timer and the firing's task
/// taking the adapter's lock, played with `raceEvent`: the round it belongs to keeps its first
/// event's `maxWait`, and the reports keep the order of the changes.
@Suite("Adapter racing events")
struct AdapterRacingEventTests {
  let clock = ManualClock()
  let drain = CallbackDrain()

  @Test func loadRacingQuietFiringNearMaxWaitStillEndsBatchAtMaxWait() async {
    let batches = Recorder<(Int, Duration)>()
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(3), maxWait: .milliseconds(5), clock: clock
    ) { [clock] in batches.append(($0, clock.now.offset)) }
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(1))
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(2))
    // At 4 ms the quiet firing races a load: the batch goes on, but its bound stays at 5 ms,
    // although the racing load asked for 3 ms more.
    await raceEvent(signal.batch.state, with: signal.timer) {
      await clock.advance(by: .milliseconds(1))
    } event: { [signal] state in
      signal.load(&state, reading: signal.timing.now())
    }
    #expect(batches.all.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(batches.all.map(\.0) == [3])
    #expect(batches.all.map(\.1) == [.milliseconds(5)])
    await clock.advance(by: .milliseconds(10))
    #expect(batches.count == 1)
  }

  @Test func panBeginRacingMaxWaitFiringSettlesAtTheNextStop() async {
    let settles = Recorder<Duration>()
    let detector = PanSettleDetector(
      settleDelay: .milliseconds(3), maxWait: .milliseconds(5), clock: clock,
      callbackQueue: drain.queue
    ) { [clock] in settles.append(clock.now.offset) }
    detector.panDidBegin()
    await clock.advance(by: .milliseconds(1))
    detector.panDidStop()
    await clock.advance(by: .milliseconds(1))
    detector.panDidBegin()
    await clock.advance(by: .milliseconds(2))
    // At 5 ms the maxWait firing races a new pan: no settle while it moves, and no timer of
    // its own; its stop settles at once.
    await raceEvent(detector.state, with: detector.timer) {
      await clock.advance(by: .milliseconds(1))
    } event: { [detector] state in
      state.begin(at: detector.timing.now())
    }
    #expect(settles.all.isEmpty)
    #expect(!detector.isSettled)
    await clock.advance(by: .seconds(1))
    #expect(settles.all.isEmpty)
    detector.panDidStop()
    #expect(detector.isSettled)
    await drain.drain()
    #expect(settles.all == [.milliseconds(1005)])
    await clock.advance(by: .seconds(1))
    #expect(settles.count == 1)
  }

  @Test func failureRacingWindowEndKeepsCountingInANewWindow() async {
    let changes = Recorder<PasscodeLockout.State>()
    let lockout = PasscodeLockout(
      maxFailures: 3, window: .seconds(10), lockoutDuration: .seconds(30), clock: clock
    ) { changes.append($0) }
    lockout.recordFailure()
    await clock.advance(by: .seconds(9))
    // At 10 s the window's end races a failure that takes the lock first: it counts, and
    // the window restarts from it.
    await raceEvent(lockout.core.state, with: lockout.core.timer) {
      await clock.advance(by: .seconds(1))
    } event: { [lockout] rules in
      _ = rules.failure(at: lockout.core.timing.now())
    }
    #expect(lockout.state == .open(failures: 2))
    await clock.advance(by: .seconds(10) - .milliseconds(1))
    #expect(lockout.state == .open(failures: 2))
    await clock.advance(by: .milliseconds(1))
    #expect(lockout.state == .open(failures: 0))
    #expect(changes.all == [.open(failures: 1), .open(failures: 2), .open(failures: 0)])
  }
}
