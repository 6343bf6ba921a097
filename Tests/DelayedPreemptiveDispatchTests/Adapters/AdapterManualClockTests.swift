import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// `ManualClock.advance(by:)` returns after the callbacks its timers caused have
/// run. Each test is written as a user would: the adapter's own callback queue, no drain, the
/// check right after `advance` returns; and repeated, since the race it guards against lost a
/// callback in a few runs out of a hundred. Each callback does a little work, as a view model's
/// update would.
@Suite("Adapters on ManualClock")
struct AdapterManualClockTests {
  static let iterations = 1_000

  /// A few microseconds of work, the size of a small UI update.
  static func update() {
    var total = 0
    for value in 0..<5_000 { total &+= value }
    withExtendedLifetime(total) {}
  }

  @Test func lockoutCallbacksHaveRunWhenAdvanceReturns() async {
    var late = 0
    for _ in 0..<Self.iterations {
      let clock = ManualClock()
      let changes = Recorder<PasscodeLockout.State>()
      let lockout = PasscodeLockout(
        maxFailures: 2, window: .seconds(10), lockoutDuration: .seconds(30), clock: clock
      ) {
        Self.update()
        changes.append($0)
      }
      lockout.recordFailure()
      await clock.advance(by: .seconds(10))
      if changes.all != [.open(failures: 1), .open(failures: 0)] { late += 1 }
      lockout.recordFailure()
      lockout.recordFailure()
      await clock.advance(by: .seconds(30))
      if changes.all.last != .open(failures: 0) || changes.count != 5 { late += 1 }
    }
    #expect(late == 0, "\(late) checks ran before the callback")
  }

  @Test func allLoadedCallbackHasRunWhenAdvanceReturns() async {
    var late = 0
    for _ in 0..<Self.iterations {
      let clock = ManualClock()
      let batches = Recorder<Int>()
      let signal = AllResourcesLoadedSignal(quietPeriod: .milliseconds(500), clock: clock) {
        Self.update()
        batches.append($0)
      }
      signal.resourceDidLoad()
      signal.resourceDidLoad()
      await clock.advance(by: .milliseconds(500))
      if batches.all != [2] { late += 1 }
    }
    #expect(late == 0, "\(late) checks ran before the callback")
  }

  @Test func panSettleCallbackHasRunWhenAdvanceReturns() async {
    var late = 0
    for _ in 0..<Self.iterations {
      let clock = ManualClock()
      let settles = Recorder<Duration>()
      let detector = PanSettleDetector(
        settleDelay: .milliseconds(250), maxWait: .seconds(1), clock: clock
      ) {
        Self.update()
        settles.append(clock.now.offset)
      }
      detector.panDidBegin()
      detector.panDidStop()
      await clock.advance(by: .milliseconds(250))
      if settles.all != [.milliseconds(250)] { late += 1 }
    }
    #expect(late == 0, "\(late) checks ran before the callback")
  }
}
