import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// Runs `advance` while another thread holds an adapter's lock, and runs `event` under that lock
/// once the clock has reached the deadline of the adapter's armed timer: the event lands exactly
/// between the clock reaching the deadline and the firing taking the adapter's lock, which is
/// the race that could push a batch past `maxWait`, made deterministic.
func raceEvent<Rules: AdapterRules>(
  _ lock: LockBox<Rules>, with timer: any BurstTimer,
  advance: () async -> Void, event: @escaping @Sendable (inout Rules) -> Void
) async {
  let holder = DispatchQueue(label: "AdapterMaxWaitTests.holder")
  let isArmed = await withCheckedContinuation { (locked: CheckedContinuation<Bool, Never>) in
    holder.async {
      lock.withLock { rules in
        let deadline = rules.timer.armedDeadline
        locked.resume(returning: deadline != nil)
        guard let deadline else { return }
        // The clock reaches the deadline, then its firing blocks on this lock inside the
        // adapter.
        while AdapterTiming(timer: timer, awaitsCallbacks: false).now() < deadline {}
        event(&rules)
      }
    }
  }
  #expect(isArmed, "the race needs an armed timer")
  await advance()
  // The holder has released the lock: the firing it raced has been handled.
  await withCheckedContinuation { continuation in holder.async { continuation.resume() } }
}

/// A batch or a pan settle lasts no longer than `maxWait`, however dense the
/// events, even when an event comes once the round is due, before its firing takes the lock.
@Suite("Adapter maxWait")
struct AdapterMaxWaitTests {
  let clock = ManualClock()

  @Test func loadRacingMaxWaitFiringStillEndsBatchAtMaxWait() async {
    let batches = Recorder<Int>()
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(3), maxWait: .milliseconds(5), clock: clock
    ) { batches.append($0) }
    for _ in 0..<4 {
      signal.resourceDidLoad()
      await clock.advance(by: .milliseconds(1))
    }
    signal.resourceDidLoad()
    // At 5 ms the maxWait firing races a sixth load, which belongs to the first batch.
    await raceEvent(signal.batch.state, with: signal.timer) {
      await clock.advance(by: .milliseconds(1))
    } event: { [signal] state in
      signal.load(&state, reading: signal.timing.now())
    }
    #expect(batches.all == [6])
    // A load every millisecond after that: each batch ends 5 ms after its first load.
    for _ in 0..<20 {
      await clock.advance(by: .milliseconds(1))
      signal.resourceDidLoad()
    }
    #expect(batches.all == [6, 5, 5, 5])
    #expect(signal.loadedCount == 5)
  }

  @Test func loadRacingQuietFiringKeepsBatchsOwnMaxWait() async {
    let batches = Recorder<Int>()
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(3), maxWait: .milliseconds(10), clock: clock
    ) { batches.append($0) }
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(1))
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(2))
    // At 4 ms the quiet period's firing races a load: the batch goes on, with its first
    // load's maxWait (10 ms), not a fresh one from the racing load.
    await raceEvent(signal.batch.state, with: signal.timer) {
      await clock.advance(by: .milliseconds(1))
    } event: { [signal] state in
      signal.load(&state, reading: signal.timing.now())
    }
    #expect(batches.all.isEmpty)
    for _ in 0..<10 {
      await clock.advance(by: .milliseconds(1))
      signal.resourceDidLoad()
    }
    // Loads at 0, 1, 4 and 5...9 ms are signalled at 10 ms; 10...14 ms open the next batch.
    #expect(batches.all == [8])
    #expect(signal.loadedCount == 5)
  }

  @Test func panEventRacingMaxWaitFiringStillSettlesAtMaxWait() async {
    let settles = Recorder<Duration>()
    let detector = PanSettleDetector(
      settleDelay: .milliseconds(3), maxWait: .milliseconds(5), clock: clock
    ) { [clock] in settles.append(clock.now.offset) }
    detector.panDidBegin()
    await clock.advance(by: .milliseconds(4))
    // At 5 ms the maxWait firing races the pan's stop: the stop settles at once.
    await raceEvent(detector.state, with: detector.timer) {
      await clock.advance(by: .milliseconds(1))
    } event: { [detector] state in
      detector.stop(&state, reading: detector.timing.now())
    }
    #expect(settles.all == [.milliseconds(5)])
    #expect(detector.isSettled)
    // Short pans every millisecond after that settle every 5 ms.
    for _ in 0..<12 {
      await clock.advance(by: .milliseconds(1))
      detector.panDidBegin()
      detector.panDidStop()
    }
    #expect(settles.all == [.milliseconds(5), .milliseconds(11), .milliseconds(16)])
  }
}
