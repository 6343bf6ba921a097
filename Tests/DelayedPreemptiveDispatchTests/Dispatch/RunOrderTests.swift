import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// Tasks of one instance run in the order of the bursts they end, and a leading task before its
/// burst's trailing one, whichever of the queue's blocks executes first. A timer whose block is
/// already queued behind a busy queue is the adversarial case: these tests queue it by hand.
@Suite struct RunOrderTests {
  /// A timer that only records what it arms; the test enqueues a firing when it chooses, and
  /// moves its time by hand (a burst due at its submission ends there, T5, so the scenarios
  /// submit with a delay and move the time to the deadline before the queued firing runs).
  final class HandFiredTimer: BurstTimer {
    private let armed = LockBox<[TimerDelivery]>([])
    private let time = LockBox<UInt64>(0)

    var armedCount: Int { armed.withLock { $0.count } }

    func now() -> TimelineInstant { TimelineInstant(nanoseconds: time.withLock { $0 }) }

    /// Moves the time forward by `milliseconds`.
    func advance(milliseconds: UInt64) {
      time.withLock { $0 += milliseconds * 1_000_000 }
    }

    func arm(at deadline: TimelineInstant, tolerance: Duration?, delivery: TimerDelivery)
      -> TimerHandle
    {
      armed.withLock { $0.append(delivery) }
      return .none
    }

    /// Enqueues the block of the `index`-th armed timer, as if it fired while its queue was busy.
    func enqueueFiring(_ index: Int) {
      guard case .queue(let queue, let fire) = armed.withLock({ $0[index] }) else { return }
      queue.async(execute: fire)
    }
  }

  /// A queue whose target is suspended, so that every block waits until `target.resume()`.
  static func busyQueue(options: DelayOptions = DelayOptions()) -> (
    DelayedPreemptiveDispatchQueue, HandFiredTimer, DispatchQueue
  ) {
    let target = DispatchQueue(label: "RunOrderTests.target")
    target.suspend()
    let timer = HandFiredTimer()
    let queue = DelayedPreemptiveDispatchQueue(
      label: "RunOrderTests", target: target, timer: timer, options: options)
    return (queue, timer, target)
  }

  @Test func flushedTaskRunsBeforeTaskOfLaterBurstThatAdoptsQueuedTimer() {
    let (queue, timer, target) = Self.busyQueue()
    let log = Recorder<String>()
    queue.delay(for: .milliseconds(1)) { log.append("A") }
    timer.advance(milliseconds: 1)
    timer.enqueueFiring(0)  // A's timer fired; its block waits behind the busy queue
    queue.flush()  // decides A's run
    queue.delay(for: .milliseconds(1)) { log.append("B") }  // adopts the queued timer block
    #expect(timer.armedCount == 1)
    timer.advance(milliseconds: 1)  // B is due when that block runs, before the flush's
    target.resume()
    queue.wait()
    #expect(log.all == ["A", "B"])
  }

  @Test func leadingTaskRunsBeforeItsTrailingTaskWhenTimerBlockIsQueuedFirst() {
    let (queue, timer, target) = Self.busyQueue(options: DelayOptions(leading: true))
    let log = Recorder<String>()
    queue.delay(for: .milliseconds(1)) { log.append("X") }
    queue.cancel()  // the burst ends; its timer stays live for the next burst to adopt
    timer.enqueueFiring(0)  // and its block is queued before the next burst's leading run
    queue.delay(for: .milliseconds(1)) { log.append("A-leading") }
    queue.delay(for: .milliseconds(1)) { log.append("B-trailing") }  // due with the timer
    #expect(timer.armedCount == 1)
    timer.advance(milliseconds: 1)
    target.resume()
    queue.wait()
    #expect(log.all == ["X", "A-leading", "B-trailing"])
  }

  @Test func runsFollowBurstOrderUnderFlushAndDelayStorm() {
    let (queue, timer, target) = Self.busyQueue()
    let log = Recorder<Int>()
    for burst in 0..<200 {
      queue.delay(for: .milliseconds(1)) { log.append(burst) }
      timer.advance(milliseconds: 1)
      if burst % 3 == 0 { timer.enqueueFiring(timer.armedCount - 1) }
      if burst % 2 == 0 { queue.flush() }
    }
    queue.flush()
    target.resume()
    queue.wait()
    #expect(log.all == log.all.sorted())
    #expect(Set(log.all).count == log.all.count)
  }
}
