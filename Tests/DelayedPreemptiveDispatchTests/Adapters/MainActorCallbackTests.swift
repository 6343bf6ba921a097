import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// A view model as UI code has it: isolated to the main actor. The adapters' `callbackActor:`
/// initialisers let their callbacks mutate it directly; this file compiles only if they do.
@MainActor final class ScreenModel {
  var keypadEnabled = true
  var states: [PasscodeLockout.State] = []
  var tilesLoaded = 0
  var batches: [Int] = []
  /// Whether every callback ran on the main queue, which the main actor runs on. (On Linux,
  /// once the main thread has handed the main queue to the pool, that is not the main thread.)
  var allOnMainActor = true

  func note() {
    allOnMainActor = allOnMainActor && DispatchQueue.getSpecific(key: mainQueueMark) == true
  }
}

/// Marks the main queue, so that a callback can check, without trapping, that it runs there.
let mainQueueMark: DispatchSpecificKey<Bool> = {
  let key = DispatchSpecificKey<Bool>()
  DispatchQueue.main.setSpecific(key: key, value: true)
  return key
}()

/// Each adapter takes a `@MainActor` callback, delivered on the main actor in
/// order.
@Suite("Main-actor callbacks")
@MainActor
struct MainActorCallbackTests {
  let clock = ManualClock()

  @Test func lockoutUpdatesMainActorModelInOrder() async {
    let model = ScreenModel()
    let lockout = PasscodeLockout(
      maxFailures: 2, lockoutDuration: .seconds(30), clock: clock, callbackActor: .shared
    ) { state in
      model.note()
      model.keypadEnabled = state != .lockedOut
      model.states.append(state)
    }
    lockout.recordFailure()
    lockout.recordFailure()
    #expect(lockout.state == .lockedOut)
    await clock.advance(by: .seconds(30))
    #expect(model.states == [.open(failures: 1), .lockedOut, .open(failures: 0)])
    #expect(model.keypadEnabled)
    #expect(model.allOnMainActor)
  }

  @Test func panSettleUpdatesMainActorModel() async {
    let model = ScreenModel()
    let detector = PanSettleDetector(
      settleDelay: .milliseconds(250), maxWait: .seconds(1), clock: clock, callbackActor: .shared
    ) {
      model.note()
      model.tilesLoaded += 1
    }
    detector.panDidBegin()
    detector.panDidStop()
    await clock.advance(by: .milliseconds(250))
    #expect(model.tilesLoaded == 1)
    #expect(model.allOnMainActor)
  }

  @Test func allLoadedUpdatesMainActorModelInBatchOrder() async {
    let model = ScreenModel()
    let signal = AllResourcesLoadedSignal(
      quietPeriod: .milliseconds(500), clock: clock, callbackActor: .shared
    ) { count in
      model.note()
      model.batches.append(count)
    }
    for batch in 1...3 {
      for _ in 0..<batch { signal.resourceDidLoad() }
      await clock.advance(by: .milliseconds(500))
    }
    #expect(model.batches == [1, 2, 3])
    #expect(model.allOnMainActor)
  }

  @Test func realTimeInitialisersTakeMainActorCallbacks() {
    let model = ScreenModel()
    _ = PasscodeLockout(maxFailures: 3, callbackActor: MainActor.shared) { state in
      model.keypadEnabled = state != .lockedOut
    }
    _ = PasscodeLockout(lockoutDurations: [.seconds(60)], callbackActor: MainActor.shared) {
      model.states.append($0)
    }
    _ = PanSettleDetector(callbackActor: MainActor.shared) { model.tilesLoaded += 1 }
    _ = AllResourcesLoadedSignal(callbackActor: MainActor.shared) { model.batches.append($0) }
    _ = Self.makeLockoutOffTheMainActor(for: model)
    #expect(model.batches.isEmpty)
  }

  /// The README's form, from code that is not on the main actor.
  nonisolated static func makeLockoutOffTheMainActor(for keypad: ScreenModel) -> PasscodeLockout {
    PasscodeLockout(
      maxFailures: 3, window: .seconds(60), lockoutDuration: .seconds(60),
      callbackActor: MainActor.shared
    ) { state in
      keypad.keypadEnabled = state != .lockedOut
    }
  }
}
