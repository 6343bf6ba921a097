import DelayedPreemptiveDispatch
import Dispatch
import Testing

/// C3 under a storm: `combine` never runs concurrently for one instance, and every submitted
/// value reaches exactly one run of its key, in each thread's order.
@Suite struct CombineStormTests {
  @Test func everyValueReachesOneRunAndCombineNeverOverlaps() async {
    let threads = 8
    let perThread = 2_000
    let active = LockBox(0)
    let overlapped = LockBox(false)
    let received = LockBox([Int: [Int]]())
    let combine: @Sendable (inout [Int], [Int]) -> Void = { values, next in
      let running = active.withLock { count -> Int in
        count += 1
        return count
      }
      if running > 1 { overlapped.withLock { $0 = true } }
      values += next
      active.withLock { $0 -= 1 }
    }
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>(
      options: DelayOptions(maxSubmissions: 50), combine: combine
    ) { key, values in received.withLock { $0[key, default: []] += values } }
    await offCooperativePool {
      DispatchQueue.concurrentPerform(iterations: threads) { thread in
        for index in 0..<perThread {
          queue.delay(thread % 4, for: .milliseconds(1), value: [thread * perThread + index])
        }
      }
      queue.flushAll()
      _ = queue.wait(timeout: .now() + 60)
    }
    #expect(!overlapped.withLock { $0 })
    let all = received.withLock { $0 }
    #expect(all.values.map(\.count).reduce(0, +) == threads * perThread)
    #expect(Set(all.values.joined()).count == threads * perThread)
    for (key, values) in all {
      for thread in stride(from: key, to: threads, by: 4) {
        let mine = values.filter { $0 / perThread == thread }
        #expect(mine == Array(thread * perThread..<(thread + 1) * perThread))
      }
    }
  }
}
