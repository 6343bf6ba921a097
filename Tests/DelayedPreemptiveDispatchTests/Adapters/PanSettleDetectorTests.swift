import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

@Suite("PanSettleDetector")
struct PanSettleDetectorTests {
  let clock = ManualClock()
  let drain = CallbackDrain()
  let settles = Recorder<Duration>()

  func makeDetector(maxWait: Duration? = nil) -> PanSettleDetector {
    let onSettle: @Sendable () -> Void = { [settles, clock] in settles.append(clock.now.offset) }
    guard let maxWait else {
      return PanSettleDetector(
        settleDelay: .milliseconds(250), clock: clock, callbackQueue: drain.queue,
        onSettle: onSettle)
    }
    return PanSettleDetector(
      settleDelay: .milliseconds(250), maxWait: maxWait, clock: clock,
      callbackQueue: drain.queue, onSettle: onSettle)
  }

  /// Advances in `step`s; each `advance` returns after the settles it caused, so `settles`
  /// records when each fired.
  func advance(by total: Duration, step: Duration = .milliseconds(10)) async {
    var done = Duration.zero
    while done < total {
      await clock.advance(by: step)
      done += step
    }
  }

  @Test func burstOfStopsSettlesOnceAfterLastStop() async {
    let detector = makeDetector()
    for _ in 0..<3 {
      detector.panDidBegin()
      detector.panDidStop()
      await advance(by: .milliseconds(100))
    }
    #expect(!detector.isSettled)
    await advance(by: .milliseconds(140))
    #expect(settles.all.isEmpty)
    await advance(by: .milliseconds(10))
    #expect(settles.all == [.milliseconds(450)])
    #expect(detector.isSettled)
    await advance(by: .seconds(5))
    #expect(settles.all.count == 1)
  }

  @Test func isSettledBeforeAnyPanAndFalseWhilePanning() async {
    let detector = makeDetector()
    #expect(detector.isSettled)
    detector.panDidBegin()
    #expect(!detector.isSettled)
    detector.panDidStop()
    #expect(!detector.isSettled)
    await clock.advance(by: .milliseconds(250))
    #expect(detector.isSettled)
  }

  @Test func panDidBeginHoldsSettleOff() async {
    let detector = makeDetector()
    detector.panDidStop()
    await advance(by: .milliseconds(200))
    detector.panDidBegin()
    await advance(by: .seconds(3))
    #expect(settles.all.isEmpty)
    detector.panDidStop()
    await advance(by: .milliseconds(250))
    #expect(settles.all == [.milliseconds(3450)])
  }

  @Test func eachSeparatePanRunSettlesOnce() async {
    let detector = makeDetector()
    detector.panDidBegin()
    detector.panDidStop()
    await advance(by: .seconds(1))
    detector.panDidBegin()
    detector.panDidStop()
    await advance(by: .seconds(1))
    #expect(settles.all == [.milliseconds(250), .milliseconds(1250)])
  }

  @Test func endlessShortPansNeverSettleWithoutMaxWait() async {
    let detector = makeDetector()
    await playShortPans(detector, for: .seconds(3))
    #expect(settles.all.isEmpty)
  }

  @Test func maxWaitSettlesEndlessShortPans() async {
    let detector = makeDetector(maxWait: .seconds(1))
    await playShortPans(detector, for: .milliseconds(2500))
    // Each bound falls 50 ms after a stop; the pan that begins at the settle starts a new run.
    #expect(settles.all == [.milliseconds(1000), .milliseconds(2000)])
  }

  @Test func maxWaitDuringLongPanSettlesWhenItStops() async {
    let detector = makeDetector(maxWait: .seconds(1))
    detector.panDidBegin()
    await advance(by: .seconds(2))
    #expect(settles.all.isEmpty)
    #expect(!detector.isSettled)
    detector.panDidStop()
    await drain.drain()
    #expect(settles.all == [.seconds(2)])
    #expect(detector.isSettled)
    await advance(by: .seconds(2))
    #expect(settles.all.count == 1)
  }

  @Test func stormOfPanEventsEndingInStopSettlesOnce() async {
    let detector = makeDetector()
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<200 {
        detector.panDidBegin()
        detector.panDidStop()
      }
    }
    detector.panDidStop()
    await clock.advance(by: .milliseconds(250))
    #expect(settles.all.count == 1)
    #expect(detector.isSettled)
  }

  @Test func releasedDetectorIsFreedAndNeverSettles() async {
    var detector: PanSettleDetector? = makeDetector()
    weak let weakDetector = detector
    detector?.panDidStop()
    detector = nil
    #expect(weakDetector == nil)
    await clock.advance(by: .seconds(1))
    await drain.drain()
    #expect(settles.all.isEmpty)
  }

  /// Pans of 50 ms separated by 50 ms: each gap is shorter than the settle delay.
  private func playShortPans(_ detector: PanSettleDetector, for total: Duration) async {
    var elapsed = Duration.zero
    while elapsed < total {
      detector.panDidBegin()
      await advance(by: .milliseconds(50))
      detector.panDidStop()
      await advance(by: .milliseconds(50))
      elapsed += .milliseconds(100)
    }
  }
}
