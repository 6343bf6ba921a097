import DPDHeapStatistics
import DelayedPreemptiveDispatchTesting
import Testing

@testable import DelayedPreemptiveDispatch

/// Memory comes back: after many keys were pending and have all run (`flushAll()` then
/// `wait()`), the instance holds no key state, no timer entries, and the process's live heap is
/// back within 5 % of what the keys added. 10⁵ keys normally, 10⁶ in the long mode.
@Suite(.serialized) struct KeyedMemoryTests {
  static let keyCount = TestScale.isLong ? 1_000_000 : 100_000

  /// Bytes the live heap grew by while `pending` ran, and what is left once it is over.
  static func measure(
    _ pending: () async -> Void, then finish: () async -> Void
  ) async -> (growth: Int, left: Int) {
    let baseline = Int(dpd_live_heap_bytes())
    await pending()
    let peak = Int(dpd_live_heap_bytes())
    await finish()
    let after = Int(dpd_live_heap_bytes())
    return (peak - baseline, after - baseline)
  }

  @Test func keyedQueueGivesBackItsMemoryOnceEveryKeyHasRun() async {
    let clock = ManualClock()
    let ran = LockBox(0)
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Void>(clock: clock) { _, _ in
      ran.withLock { $0 += 1 }
    }
    queue.delay(-1, for: .seconds(1))  // warm up the instance's own storage
    queue.flushAll()
    queue.wait()
    let (growth, left) = await Self.measure {
      await offCooperativePool {
        for key in 0..<Self.keyCount { queue.delay(key, for: .seconds(60)) }
      }
    } then: {
      queue.flushAll()
      await offCooperativePool { _ = queue.wait() }
    }
    #expect(ran.withLock { $0 } == Self.keyCount + 1)
    #expect(queue.footprint == (0, 0))
    #expect(growth > Self.keyCount * 16, "the heap reading must see the keys")
    #expect(left <= growth / 20, "left \(left) B of \(growth) B")
  }

  @Test func keyedActorGivesBackItsMemoryOnceEveryKeyHasRun() async {
    let clock = ManualClock()
    let ran = LockBox(0)
    let actor = KeyedDelayedPreemptiveActor<Int, Void, ManualClock>(clock: clock) { _, _ in
      ran.withLock { $0 += 1 }
    }
    await actor.delay(-1, for: .seconds(1))
    await actor.flushAll()
    let (growth, left) = await Self.measure {
      for key in 0..<Self.keyCount { await actor.delay(key, for: .seconds(60)) }
    } then: {
      await actor.flushAll()
      await actor.wait()
    }
    #expect(ran.withLock { $0 } == Self.keyCount + 1)
    #expect(await actor.footprint == (0, 0))
    #expect(growth > Self.keyCount * 16, "the heap reading must see the keys")
    #expect(left <= growth / 20, "left \(left) B of \(growth) B")
  }
}
