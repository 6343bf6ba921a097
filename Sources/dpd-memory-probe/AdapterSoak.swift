import DPDHeapStatistics
import DelayedPreemptiveDispatch
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An adapter on real time under events that never pause (issue 39, part 2):
///
///   dpd-memory-probe adapter signal|pan|lockout SECONDS THREADS
///
/// THREADS threads call the adapter's event (`resourceDidLoad()`; `panDidBegin()` then
/// `panDidStop()`; `recordFailure()`) without pause for SECONDS, while a sampler reads the live
/// heap and the resident memory every 100 ms. The signal and the detector have a quiet period
/// of 20 ms and a `maxWait` of 50 ms; the lockout locks out at the third failure within 20 ms,
/// for 50 ms. It prints, on one line: the live heap's peak growth in bytes, the peak resident
/// memory in bytes, the callbacks counted (batches, settles, lockouts), the gaps between them in
/// nanoseconds (median, 99th percentile, max), and the events.
enum AdapterSoak {
  static let usage = "usage: dpd-memory-probe adapter signal|pan|lockout SECONDS THREADS"

  static func run(adapter: String, seconds: Int, threads: Int) {
    let clock = ContinuousClock()
    let instants = LockBox<[ContinuousClock.Instant]>([])
    let note: @Sendable () -> Void = { instants.withLock { $0.append(clock.now) } }
    let event: @Sendable () -> Void
    // Kept alive until the end: the callbacks of the adapter it names.
    let owner: AnyObject
    switch adapter {
    case "signal":
      let signal = AllResourcesLoadedSignal(
        quietPeriod: .milliseconds(20), maxWait: .milliseconds(50)
      ) { _ in note() }
      (owner, event) = (signal, { signal.resourceDidLoad() })
    case "pan":
      let detector = PanSettleDetector(settleDelay: .milliseconds(20), maxWait: .milliseconds(50)) {
        note()
      }
      (owner, event) = (
        detector,
        {
          detector.panDidBegin()
          detector.panDidStop()
        }
      )
    case "lockout":
      let lockout = PasscodeLockout(
        maxFailures: 3, window: .milliseconds(20), lockoutDuration: .milliseconds(50)
      ) { state in if state == .lockedOut { note() } }
      (owner, event) = (lockout, { lockout.recordFailure() })
    default:
      print(usage)
      exit(2)
    }
    let baseline = Int(dpd_live_heap_bytes())
    let stop = LockBox(false)
    let events = LockBox(0)
    let group = DispatchGroup()
    for index in 0..<threads {
      DispatchQueue(label: "soak.\(index)").async(group: group) {
        var count = 0
        while !stop.withLock({ $0 }) {
          for _ in 0..<64 { event() }
          count += 64
        }
        events.withLock { $0 += count }
      }
    }
    var peakHeap = 0
    var peakResident = 0
    let end = clock.now + .seconds(seconds)
    while clock.now < end {
      usleep(100_000)
      peakHeap = max(peakHeap, Int(dpd_live_heap_bytes()) - baseline)
      peakResident = max(peakResident, residentBytes())
    }
    stop.withLock { $0 = true }
    group.wait()
    withExtendedLifetime(owner) {}
    let seen = instants.withLock { $0 }
    let gaps = zip(seen.dropFirst(), seen).map { ($0 - $1).nanoseconds }.sorted()
    func percentile(_ fraction: Double) -> Int64 {
      gaps.isEmpty ? 0 : gaps[min(gaps.count - 1, Int(Double(gaps.count) * fraction))]
    }
    print(
      peakHeap, peakResident, seen.count, percentile(0.5), percentile(0.99), gaps.last ?? 0,
      events.withLock { $0 })
  }

  /// The process's resident memory: `/proc/self/statm` on Linux; 0 elsewhere.
  static func residentBytes() -> Int {
    #if os(Linux)
      let file = open("/proc/self/statm", O_RDONLY)
      guard file >= 0 else { return 0 }
      defer { close(file) }
      var buffer = [UInt8](repeating: 0, count: 128)
      let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
      guard count > 0 else { return 0 }
      // "size resident shared ...", in pages.
      let fields = String(decoding: buffer[0..<count], as: UTF8.self).split(separator: " ")
      guard fields.count > 1, let resident = Int(fields[1]) else { return 0 }
      return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    #else
      return 0
    #endif
  }
}

extension Duration {
  /// The duration in whole nanoseconds.
  fileprivate var nanoseconds: Int64 {
    components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
  }
}
