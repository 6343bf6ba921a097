import Contenders
import Dispatch

/// The keyed workloads outside the harness, for a profiler:
///   ProfileDriver keyed-arm|keyed-resubmit|keyed-memory|keyed-due keyed-queue|keyed-actor|... [keys]
func keyedWorkload(_ workload: String, _ contender: KeyedContender, keys: Int) {
  func measure<D: KeyedDebouncer>(_: D.Type) {
    let countdown = Countdown(count: keys)
    let debouncer = D { _ in countdown.arrive() }
    let start = DispatchTime.now().uptimeNanoseconds
    switch workload {
    case "keyed-resubmit":
      let pending = max(keys / 100, 1)
      for key in 0..<pending { debouncer.submit(key, delay: .seconds(60)) }
      for index in 0..<keys { debouncer.submit(index % pending, delay: .seconds(60)) }
    case "keyed-due":
      // One shared deadline, far enough ahead for arming to end before it (10 µs per key).
      let deadline = start + UInt64(keys) * 10_000
      for key in 0..<keys {
        let now = DispatchTime.now().uptimeNanoseconds
        debouncer.submit(key, delay: .nanoseconds(Int64(deadline) - Int64(now)))
      }
      let armed = DispatchTime.now().uptimeNanoseconds
      debouncer.settle()
      countdown.latch.wait()
      let ran = DispatchTime.now().uptimeNanoseconds
      print(
        "due at once: armed \((armed - start) / 1_000_000) ms, all ran \((ran - max(armed, deadline)) / 1_000_000) ms after the deadline"
      )
    case "keyed-memory":
      let before = ProcessMemory.residentBytes()
      for key in 0..<keys { debouncer.submit(key, delay: .seconds(60)) }
      let growth = ProcessMemory.residentBytes() - before
      print("keyed-memory \(contender.rawValue): \(growth / keys) B of resident growth per key")
    default:
      for key in 0..<keys { debouncer.submit(key, delay: .seconds(60)) }
    }
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    print("\(workload) \(contender.rawValue): \(keys) keys, \(elapsed / UInt64(keys)) ns per key")
    debouncer.cancelAll()
  }
  switch contender.driver {
  case .sync(let type): measure(type)
  case .async: print("\(contender.rawValue) is called with await: use keyedWorkloadAwaiting")
  }
}

/// The keyed workloads for a contender called with `await` (the keyed actor), from one task that
/// awaits each submission; the same steps and printout as ``keyedWorkload(_:_:keys:)``.
func keyedWorkloadAwaiting(_ workload: String, _ contender: KeyedContender, keys: Int) async {
  func measure<D: AsyncKeyedDebouncer>(_: D.Type) async {
    let countdown = Countdown(count: keys)
    let debouncer = D { _ in countdown.arrive() }
    let start = DispatchTime.now().uptimeNanoseconds
    switch workload {
    case "keyed-resubmit":
      let pending = max(keys / 100, 1)
      for key in 0..<pending { await debouncer.submit(key, delay: .seconds(60)) }
      for index in 0..<keys { await debouncer.submit(index % pending, delay: .seconds(60)) }
    case "keyed-due":
      let deadline = start + UInt64(keys) * 10_000
      for key in 0..<keys {
        let now = DispatchTime.now().uptimeNanoseconds
        await debouncer.submit(key, delay: .nanoseconds(Int64(deadline) - Int64(now)))
      }
      let armed = DispatchTime.now().uptimeNanoseconds
      await countdown.latch.wait()
      let ran = DispatchTime.now().uptimeNanoseconds
      print(
        "due at once: armed \((armed - start) / 1_000_000) ms, all ran \((ran - max(armed, deadline)) / 1_000_000) ms after the deadline"
      )
    case "keyed-memory":
      let before = ProcessMemory.residentBytes()
      for key in 0..<keys { await debouncer.submit(key, delay: .seconds(60)) }
      let growth = ProcessMemory.residentBytes() - before
      print("keyed-memory \(contender.rawValue): \(growth / keys) B of resident growth per key")
    default:
      for key in 0..<keys { await debouncer.submit(key, delay: .seconds(60)) }
    }
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    print("\(workload) \(contender.rawValue): \(keys) keys, \(elapsed / UInt64(keys)) ns per key")
    await debouncer.cancelAll()
  }
  guard case .async(let type) = contender.driver else { return }
  await measure(type)
}
