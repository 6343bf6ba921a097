import DelayedPreemptiveDispatchTesting
import Foundation
import Testing

@testable import DelayedPreemptiveDispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Memory comes back: after many keys were pending and have all run (`flushAll()` then
/// `wait()`), the instance holds no key state and no timer entries, and the live heap is back
/// within 5 % of what the keys added. 10⁵ keys normally, 10⁶ in the long mode.
///
/// A pending key stays small, too: at most 256 bytes of live heap. With `Value == Void` it is
/// about 210 B at 10⁵ keys (the arrays' spare capacity is largest there) and 178 B at 10⁶; a
/// ticket record with a lock of its own (144 B instead of 32 B) would exceed the bound.
///
/// The heap is read in `dpd-memory-probe`, a process of its own: the reading is process-wide,
/// and suites running beside this one in the test process would move it.
@Suite(.serialized) struct KeyedMemoryTests {
  static let keyCount = TestScale.isLong ? 1_000_000 : 100_000

  /// Runs the probe for `instance` and returns what it printed: growth, left and runs.
  static func probe(_ instance: String) throws -> (growth: Int, left: Int, runs: Int) {
    let path = PreconditionTests.productsDirectory.appendingPathComponent("dpd-memory-probe").path
    // The probe inherits this process's environment (the sanitizers' options included).
    let (text, status) = try spawnAndRead(
      path, arguments: [instance, String(keyCount)], environment: nil, descriptor: 1)
    let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    guard status == 0, numbers.count == 3 else {
      Issue.record("dpd-memory-probe \(instance) ended with status \(status), printed \(text)")
      throw POSIXError(.EIO)
    }
    return (numbers[0], numbers[1], numbers[2])
  }

  @Test(arguments: ["keyed-queue", "keyed-actor"])
  func keyedInstanceGivesBackItsMemoryOnceEveryKeyHasRun(_ instance: String) throws {
    let (growth, left, runs) = try Self.probe(instance)
    #expect(runs == Self.keyCount + 1)
    #expect(growth > Self.keyCount * 16, "the heap reading must see the keys")
    #expect(growth <= Self.keyCount * 256, "\(growth / Self.keyCount) B per pending key")
    #expect(left <= growth / 20, "left \(left) B of \(growth) B")
  }

  /// A pending key's line in the table, as the table stores it (optional): 88 bytes with a
  /// `Void` value, since the burst has no optional fields and the small counters fill padding.
  @Test func pendingKeyStateWithAVoidValueFitsIn88Bytes() {
    #expect(MemoryLayout<BurstLine<Void>?>.stride <= 88)
  }

  @Test func keyedQueueHoldsNoKeyStateOnceEveryKeyHasRun() async {
    let clock = ManualClock()
    let ran = LockBox(0)
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Void>(clock: clock) { _, _ in
      ran.withLock { $0 += 1 }
    }
    await offCooperativePool {
      for key in 0..<Self.keyCount { queue.delay(key, for: .seconds(60)) }
      queue.flushAll()
      _ = queue.wait()
    }
    #expect(ran.withLock { $0 } == Self.keyCount)
    #expect(queue.footprint == (0, 0))
  }

  @Test func keyedActorHoldsNoKeyStateOnceEveryKeyHasRun() async {
    let clock = ManualClock()
    let ran = LockBox(0)
    let actor = KeyedDelayedPreemptiveActor<Int, Void, ManualClock>(clock: clock) { _, _ in
      ran.withLock { $0 += 1 }
    }
    for key in 0..<Self.keyCount { await actor.delay(key, for: .seconds(60)) }
    await actor.flushAll()
    await actor.wait()
    #expect(ran.withLock { $0 } == Self.keyCount)
    #expect(await actor.footprint == (0, 0))
  }
}
