import DelayedPreemptiveDispatch
import Dispatch
import Testing

/// The keyed types in real time, under load: storms of 8 threads over 50 keys run every burst
/// exactly once with its last value, and `maxConcurrentTasks` holds while tasks block. They
/// follow the rule of `RealTime` (no bound on lateness, no waiting on a cooperative thread); run
/// under TSan and ASan in CI.
@Suite(.tags(.realTime), .realTimeLimit) struct KeyedRealTimeTests {
  /// What the tasks of one run saw: runs per key, the last value each key ran with, the most
  /// tasks running at once, and any overlap of one key's tasks.
  final class Observed: Sendable {
    private struct State {
      var runs: [Int: Int] = [:]
      var lastValue: [Int: Int] = [:]
      var running: Set<Int> = []
      var active = 0
      var mostActive = 0
      var overlaps = 0
    }

    private let state = LockBox(State())

    func begin(_ key: Int, _ value: Int) {
      state.withLock { state in
        if !state.running.insert(key).inserted { state.overlaps += 1 }
        state.active += 1
        state.mostActive = max(state.mostActive, state.active)
        state.runs[key, default: 0] += 1
        state.lastValue[key] = value
      }
    }

    func end(_ key: Int) {
      state.withLock { state in
        state.running.remove(key)
        state.active -= 1
      }
    }

    var runs: [Int: Int] { state.withLock { $0.runs } }
    var lastValue: [Int: Int] { state.withLock { $0.lastValue } }
    var mostActive: Int { state.withLock { $0.mostActive } }
    var overlaps: Int { state.withLock { $0.overlaps } }
  }

  @Test func queueStormOverFiftyKeysRunsEachBurstOnceWithItsLastValue() async {
    let observed = Observed()
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Int>(maxConcurrentTasks: 3) {
      key, value in
      observed.begin(key, value)
      observed.end(key)
    }
    // Eight threads submit to 50 keys at once; then each key gets one last value, which its
    // last run must see, however the storm's bursts ended.
    await offCooperativePool {
      DispatchQueue.concurrentPerform(iterations: 8) { thread in
        for round in 0..<500 {
          let key = (thread * 31 + round) % 50
          queue.delay(key, 0.03, value: round)
        }
      }
    }
    for key in 0..<50 { queue.delay(key, 0.05, value: 1_000 + key) }
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(observed.overlaps == 0)
    #expect(observed.mostActive <= 3)
    for key in 0..<50 {
      #expect(observed.lastValue[key] == 1_000 + key)
    }
    #expect(queue.pendingCount == 0)
  }

  @Test func maxConcurrentTasksHoldsWhileTasksBlock() async {
    let observed = Observed()
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Int>(maxConcurrentTasks: 2) {
      key, value in
      observed.begin(key, value)
      let end = DispatchTime.now().uptimeNanoseconds + 2_000_000
      while DispatchTime.now().uptimeNanoseconds < end {}  // 2 ms of work
      observed.end(key)
    }
    for key in 0..<40 { queue.delay(key, 0, value: key) }
    #expect(await RealTime.waitUntilIdle { queue.wait(timeout: $0) } == .success)
    #expect(observed.runs.count == 40)
    #expect(observed.runs.values.allSatisfy { $0 == 1 })
    #expect((1...2).contains(observed.mostActive))
    #expect(observed.overlaps == 0)
  }

  @Test func actorStormOverFiftyKeysRunsEachBurstOnceWithItsLastValue() async {
    let observed = Observed()
    let actor = KeyedDelayedPreemptiveActor<Int, Int, ContinuousClock>(maxConcurrentTasks: 3) {
      key, value in
      observed.begin(key, value)
      await Task.yield()
      observed.end(key)
    }
    await withTaskGroup(of: Void.self) { group in
      for task in 0..<8 {
        group.addTask {
          for round in 0..<200 {
            await actor.delay((task * 31 + round) % 50, for: .milliseconds(30), value: round)
          }
        }
      }
    }
    for key in 0..<50 { await actor.delay(key, for: .milliseconds(50), value: 1_000 + key) }
    await actor.wait()
    #expect(observed.overlaps == 0)
    #expect(observed.mostActive <= 3)
    for key in 0..<50 {
      #expect(observed.lastValue[key] == 1_000 + key)
    }
    #expect(await actor.pendingCount == 0)
  }
}
