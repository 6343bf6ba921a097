import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// With the default `target: nil`, instances share the global queue's pool of
/// threads instead of each getting an overcommit thread.
///
/// Each test makes 10,000 instances fire at once; every task notes how many threads the process
/// has (Linux: the entries of `/proc/self/task`) and which thread it runs on. On an overcommit
/// queue per instance, libdispatch runs them on hundreds of threads; on the global pool, on a
/// few. The bound leaves room for threads that tests running beside these ones start.
@Suite("Default target threads", .serialized, .tags(.realTime), .realTimeLimit)
struct DefaultTargetThreadTests {
  static let instances = 10_000
  /// Threads the firing may add to the process, and distinct threads its tasks may run on.
  static let threadBound = 64

  @Test func defaultTargetQueuesFireOnAFewSharedThreads() async {
    let probe = ThreadProbe()
    let baseline = ThreadProbe.processThreadCount()
    let queues = (0..<Self.instances).map { index in
      DelayedPreemptiveDispatchQueue(label: "threads.\(index)")
    }
    await probe.fire(count: queues.count) { index, task in
      queues[index].delay(for: .zero, task: task)
    }
    probe.expectBounded(baseline: baseline, bound: Self.threadBound)
  }

  @Test func adapterCallbackQueuesFireOnAFewSharedThreads() async {
    let probe = ThreadProbe()
    let baseline = ThreadProbe.processThreadCount()
    let ready = Recorder<AllResourcesLoadedSignal>()
    let task = LockBox<[(@Sendable () -> Void)?]>(Array(repeating: nil, count: Self.instances))
    for index in 0..<Self.instances {
      ready.append(
        AllResourcesLoadedSignal(quietPeriod: .milliseconds(1)) { _ in
          task.withLock { $0[index] }?()
        })
    }
    let signals = ready.all
    await probe.fire(count: signals.count) { index, run in
      task.withLock { $0[index] = run }
      signals[index].resourceDidLoad()
    }
    probe.expectBounded(baseline: baseline, bound: Self.threadBound)
  }
}

/// Notes, from inside each task, the process's thread count and the thread the task runs on.
final class ThreadProbe: Sendable {
  private struct Seen {
    var peakThreads = 0
    var threads = Set<UInt>()
  }

  private let seen = LockBox(Seen())

  /// The process's threads: the entries of `/proc/self/task` on Linux; `nil` elsewhere.
  static func processThreadCount() -> Int? {
    #if os(Linux)
      guard let directory = opendir("/proc/self/task") else { return nil }
      defer { closedir(directory) }
      var count = 0
      while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
          String(decoding: $0.prefix(1), as: UTF8.self)
        }
        if name != "." { count += 1 }
      }
      return count
    #else
      return nil
    #endif
  }

  /// Starts `count` instances through `start(index, task)` and returns once every task ran.
  func fire(count: Int, start: (Int, @escaping @Sendable () -> Void) -> Void) async {
    let group = DispatchGroup()
    for index in 0..<count {
      group.enter()
      start(index) { [self] in
        note()
        group.leave()
      }
    }
    await withCheckedContinuation { continuation in
      group.notify(queue: .global()) { continuation.resume() }
    }
  }

  private func note() {
    let threads = Self.processThreadCount() ?? 0
    let thread = threadID()
    // A little work keeps each task on its thread long enough for the pool to show its size.
    var spin = 0
    for value in 0..<2_000 { spin &+= value }
    withExtendedLifetime(spin) {}
    seen.withLock { seen in
      seen.peakThreads = max(seen.peakThreads, threads)
      seen.threads.insert(thread)
    }
  }

  func expectBounded(baseline: Int?, bound: Int) {
    let seen = seen.withLock { $0 }
    #expect(seen.threads.count <= bound, "tasks ran on \(seen.threads.count) threads")
    #if os(Linux)
      let added = seen.peakThreads - (baseline ?? 0)
      #expect(baseline != nil, "/proc/self/task could not be read")
      #expect(
        added <= bound, "the process grew from \(baseline ?? 0) to \(seen.peakThreads) threads")
    #endif
  }
}

/// The calling thread, as a number: `pthread_t` is a pointer on Apple platforms, an integer on
/// Linux.
func threadID() -> UInt {
  #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
  #else
    return UInt(pthread_self())
  #endif
}
