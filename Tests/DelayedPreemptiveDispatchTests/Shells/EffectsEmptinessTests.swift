import Testing

@testable import DelayedPreemptiveDispatch

/// The stream keeps one effects value for all its elements and empties it again only when
/// `isEmpty` is false, so `isEmpty` must see every stored property: one it missed would be
/// performed again with the next element (a timer armed twice, a consumer resumed twice).
@Suite struct EffectsEmptinessTests {
  @Test func burstEffectsIsEmptyChecksEveryStoredProperty() {
    #expect(Mirror(reflecting: BurstEffects()).children.count == BurstEffects.storedPropertyCount)
    #expect(BurstEffects().isEmpty)
    let record = BurstRecord(keepsAll: false)
    let changes: [(inout BurstEffects) -> Void] = [
      { $0.resolution = BurstResolution(record: nil, lastSeq: 1, cancelled: false) },
      { $0.resolutions = [] },
      { $0.preempted = record },
      { $0.workersToStart = 1 },
      { $0.timer = TimerRequest(deadline: TimelineInstant(nanoseconds: 1), generation: 1) },
      { $0.cancelledTimer = TimerHandle.none },
      { $0.cancelsRunningRun = true },
      { $0.becameBusy = true },
      { $0.becameIdle = true },
      { $0.moreDue = true },
    ]
    #expect(changes.count == BurstEffects.storedPropertyCount)
    for (index, change) in changes.enumerated() {
      var effects = BurstEffects()
      change(&effects)
      #expect(!effects.isEmpty, "change \(index) left the effects empty")
    }
  }

  @Test func debounceEffectsIsEmptyChecksEveryStoredProperty() {
    #expect(
      Mirror(reflecting: DebounceEffects()).children.count == DebounceEffects.storedPropertyCount)
    #expect(DebounceEffects().isEmpty)
    let changes: [(inout DebounceEffects) -> Void] = [
      { $0.resumesConsumer = true },
      { $0.burst.moreDue = true },
      { $0.startsReading = true },
      { $0.cancelledReading = Task {} },
    ]
    // The fifth, `watchers`, needs a continuation: see the next test.
    #expect(changes.count + 1 == DebounceEffects.storedPropertyCount)
    for (index, change) in changes.enumerated() {
      var effects = DebounceEffects()
      change(&effects)
      #expect(!effects.isEmpty, "change \(index) left the effects empty")
    }
  }

  @Test func debounceEffectsWithAWatcherIsNotEmpty() async {
    await withCheckedContinuation { (watcher: CheckedContinuation<Void, Never>) in
      var effects = DebounceEffects()
      effects.watchers = [watcher]
      #expect(!effects.isEmpty)
      watcher.resume()
    }
  }
}
