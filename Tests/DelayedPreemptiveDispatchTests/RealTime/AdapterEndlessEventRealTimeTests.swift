import Foundation
import Testing

/// Each adapter on real time under events that never pause, from 2 threads for 4 s (issue 39,
/// part 2): the live heap stays bounded, and batches, settles and lockouts keep coming. Run in
/// `dpd-memory-probe adapter`, a process of its own, since the heap reading is process-wide.
///
/// With an action queue that a firing drains while events fill it, the heap grew by about
/// 100 MB per second here. The bound leaves room for a loaded 2-core machine, and asserts no
/// latency: on such a machine only that signals come, eventually, as `RealTime` says.
@Suite("Adapters RealTime endless events", .serialized, .tags(.realTime), .realTimeLimit)
struct AdapterEndlessEventRealTimeTests {
  static let seconds = 4
  static let threads = 2
  /// The live heap's growth allowed over the run.
  static let heapBound = 32 << 20

  @Test(arguments: ["signal", "pan", "lockout"])
  func adapterUnderEndlessEventsKeepsItsHeapBounded(_ adapter: String) throws {
    let path = PreconditionTests.productsDirectory.appendingPathComponent("dpd-memory-probe").path
    let (text, status) = try spawnAndRead(
      path, arguments: ["adapter", adapter, String(Self.seconds), String(Self.threads)],
      environment: nil, descriptor: 1)
    let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    guard status == 0, numbers.count == 8 else {
      Issue.record("dpd-memory-probe adapter \(adapter) ended with status \(status): \(text)")
      return
    }
    let (heap, signals, events) = (numbers[0], numbers[2], numbers[6])
    #expect(heap < Self.heapBound, "the live heap grew by \(heap >> 20) MB")
    #expect(events > 0)
    #expect(signals > 0, "no callback in \(Self.seconds) s of \(events) events")
  }
}
