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
/// heap every 100 ms. The signal and the detector have a quiet period of 20 ms and a `maxWait` of
/// 50 ms; the lockout locks out at the third failure within 20 ms, for 50 ms. It prints, on one
/// line: the live heap's peak growth in bytes, the peak resident memory in bytes, the callbacks
/// counted (batches, settles, lockouts), the gaps between them in nanoseconds (median, 99th
/// percentile, max), the events, and the gaps longer than 1.75 × 50 ms.
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
    let end = clock.now + .seconds(seconds)
    while clock.now < end {
      usleep(100_000)
      peakHeap = max(peakHeap, Int(dpd_live_heap_bytes()) - baseline)
    }
    stop.withLock { $0 = true }
    group.wait()
    withExtendedLifetime(owner) {}
    let seen = instants.withLock { $0 }
    let gaps = zip(seen.dropFirst(), seen).map { ($0 - $1).nanoseconds }.sorted()
    func percentile(_ fraction: Double) -> Int64 {
      gaps.isEmpty ? 0 : gaps[min(gaps.count - 1, Int(Double(gaps.count) * fraction))]
    }
    let late = gaps.filter { $0 > 87_500_000 }.count
    print(
      peakHeap, peakResidentBytes(), seen.count, percentile(0.5), percentile(0.99), gaps.last ?? 0,
      events.withLock { $0 }, late)
  }

  /// The process's peak resident memory so far (`getrusage`'s `ru_maxrss`).
  static func peakResidentBytes() -> Int {
    var usage = rusage()
    #if canImport(Darwin)
      let who = RUSAGE_SELF
    #else
      let who = RUSAGE_SELF.rawValue
    #endif
    guard getrusage(who, &usage) == 0 else { return 0 }
    #if canImport(Darwin)
      return Int(usage.ru_maxrss)  // bytes
    #else
      return Int(usage.ru_maxrss) * 1_024  // kilobytes
    #endif
  }
}

extension Duration {
  /// The duration in whole nanoseconds.
  fileprivate var nanoseconds: Int64 {
    components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
  }
}
