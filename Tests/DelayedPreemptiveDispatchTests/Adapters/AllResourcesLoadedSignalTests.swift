import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

@Suite("AllResourcesLoadedSignal")
struct AllResourcesLoadedSignalTests {
  let clock = ManualClock()
  let drain = CallbackDrain()
  let batches = Recorder<Int>()

  func makeSignal(maxWait: Duration? = nil) -> AllResourcesLoadedSignal {
    AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(500), maxWait: maxWait, clock: clock, callbackQueue: drain.queue
    ) { [batches] in batches.append($0) }
  }

  /// Waits, without sleeping, until `count` tasks are suspended in `allLoaded()`.
  func waitForWaiters(_ count: Int, on signal: AllResourcesLoadedSignal) async {
    while signal.waiterCount < count { await Task.yield() }
  }

  @Test func signalsQuietPeriodAfterLastLoadWithBatchCount() async {
    let signal = makeSignal()
    for _ in 0..<3 {
      signal.resourceDidLoad()
      await clock.advance(by: .milliseconds(100))
    }
    #expect(signal.loadedCount == 3)
    await clock.advance(by: .milliseconds(399))
    #expect(batches.all.isEmpty)
    await clock.advance(by: .milliseconds(1))
    #expect(batches.all == [3])
    #expect(signal.loadedCount == 0)
  }

  @Test func nextLoadStartsNewBatch() async {
    let signal = makeSignal()
    signal.resourceDidLoad()
    await clock.advance(by: .seconds(1))
    signal.resourceDidLoad()
    signal.resourceDidLoad()
    #expect(signal.loadedCount == 2)
    await clock.advance(by: .seconds(1))
    #expect(batches.all == [1, 2])
  }

  @Test func maxWaitEndsBatchThatNeverGoesQuiet() async {
    let signal = makeSignal(maxWait: .seconds(1))
    for _ in 0..<15 {
      signal.resourceDidLoad()
      await clock.advance(by: .milliseconds(100))
    }
    await clock.advance(by: .seconds(1))
    // Loads at 0...900 ms form the first batch: at 1000 ms the bound fires before the load made
    // at that instant, which opens the second batch, of the five loads at 1000...1400 ms.
    #expect(batches.all == [10, 5])
  }

  @Test func allLoadedReturnsLastBatchAtOnceWhenNoLoadCameAfter() async {
    let signal = makeSignal()
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(500))
    #expect(await signal.allLoaded() == 1)
    #expect(await signal.allLoaded() == 1)
  }

  @Test func allLoadedWaitsForCurrentBatchAfterNewLoad() async {
    let signal = makeSignal()
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(500))
    signal.resourceDidLoad()
    signal.resourceDidLoad()
    let waiter = Task { await signal.allLoaded() }
    await waitForWaiters(1, on: signal)
    await clock.advance(by: .milliseconds(500))
    #expect(await waiter.value == 2)
  }

  @Test func allLoadedBeforeAnyLoadWaitsForFirstBatch() async {
    let signal = makeSignal()
    let waiter = Task { await signal.allLoaded() }
    await waitForWaiters(1, on: signal)
    signal.resourceDidLoad()
    await clock.advance(by: .milliseconds(500))
    #expect(await waiter.value == 1)
  }

  @Test func manyConcurrentWaitersAllGetBatchCount() async {
    let signal = makeSignal()
    signal.resourceDidLoad()
    let results = await withTaskGroup(of: Int.self) { group in
      for _ in 0..<200 { group.addTask { await signal.allLoaded() } }
      await waitForWaiters(200, on: signal)
      await clock.advance(by: .milliseconds(500))
      return await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results == Array(repeating: 1, count: 200))
    #expect(signal.waiterCount == 0)
  }

  @Test func releaseResumesEveryWaiterWithLoadsCountedSoFar() async {
    var signal: AllResourcesLoadedSignal? = makeSignal()
    weak let weakSignal = signal
    signal?.resourceDidLoad()
    signal?.resourceDidLoad()
    let waiters = (0..<50).map { _ in
      Task { [weak signal] in await signal?.allLoaded() }
    }
    if let signal { await waitForWaiters(50, on: signal) }
    signal = nil
    #expect(weakSignal == nil)
    for waiter in waiters { #expect(await waiter.value == 2) }
    await clock.advance(by: .seconds(1))
    await drain.drain()
    #expect(batches.all.isEmpty)
  }

  @Test func cancelledWaiterReturnsLoadsCountedSoFar() async {
    let signal = makeSignal()
    signal.resourceDidLoad()
    let waiter = Task { await signal.allLoaded() }
    await waitForWaiters(1, on: signal)
    waiter.cancel()
    #expect(await waiter.value == 1)
    #expect(signal.waiterCount == 0)
  }

  @Test func stormOfLoadsIsCountedExactlyAndSignalledOnce() async {
    let signal = makeSignal()
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<1000 { signal.resourceDidLoad() }
    }
    #expect(signal.loadedCount == 8000)
    await clock.advance(by: .milliseconds(500))
    #expect(batches.all == [8000])
  }

  @Test func releasedSignalWithPendingTimerIsFreed() async {
    var signal: AllResourcesLoadedSignal? = makeSignal()
    weak let weakSignal = signal
    signal?.resourceDidLoad()
    signal = nil
    #expect(weakSignal == nil)
    await clock.advance(by: .seconds(1))
    await drain.drain()
    #expect(batches.all.isEmpty)
  }
}
