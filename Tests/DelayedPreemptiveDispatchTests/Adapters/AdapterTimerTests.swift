import Testing

@testable import DelayedPreemptiveDispatch

/// An adapter's timer without time, threads or lock: a round is a burst of the driver's line,
/// which ends by its timer or at an event that finds it due, and what a transition decides
/// comes out once, in order.
@Suite struct AdapterTimerTests {
  static func tick(_ milliseconds: UInt64) -> TimelineInstant {
    TimelineInstant(nanoseconds: milliseconds * 1_000_000)
  }

  /// The timer a transition asked to arm, taken with the rest of what follows the lock.
  static func armed(_ timer: inout AdapterTimer) -> TimerRequest? {
    timer.takeAfterLock().effects.timer
  }

  @Test func eventThatFindsTheRoundDueEndsItWithItself() {
    var timer = AdapterTimer(maxWait: .milliseconds(5))
    timer.arm(after: .milliseconds(3), at: .zero)
    let openedDue = timer.takeDue()
    timer.arm(after: .milliseconds(3), at: .milliseconds(5))
    let endedDue = timer.takeDue()
    #expect(!openedDue)
    #expect(endedDue)
    let endedAgain = timer.takeDue()
    #expect(!endedAgain, "a round ends once")
  }

  @Test func firingBeforeTheMovedDeadlineRearmsWithinMaxWait() throws {
    var timer = AdapterTimer(maxWait: .milliseconds(5))
    timer.arm(after: .milliseconds(3), at: .zero)
    let first = try #require(Self.armed(&timer))
    // A later deadline arms nothing: the armed timer fires early and re-arms.
    timer.arm(after: .milliseconds(3), at: .milliseconds(1))
    let moved = Self.armed(&timer)
    timer.fired(generation: first.generation, at: .milliseconds(3))
    let early = timer.takeDue()
    let second = try #require(Self.armed(&timer))
    timer.arm(after: .milliseconds(3), at: .milliseconds(4))
    timer.fired(generation: second.generation, at: .milliseconds(4))
    let third = try #require(Self.armed(&timer))
    timer.fired(generation: third.generation, at: .milliseconds(5))
    #expect(first.deadline == Self.tick(3))
    #expect(moved == nil)
    #expect(!early)
    #expect(second.deadline == Self.tick(4))
    let ended = timer.takeDue()
    #expect(third.deadline == Self.tick(5), "capped at the round's maxWait")
    #expect(ended)
  }

  @Test func staleFiringIsNotDue() throws {
    var timer = AdapterTimer(maxWait: nil)
    timer.arm(after: .seconds(10), at: .zero)
    let armed = try #require(Self.armed(&timer))
    timer.cancel()
    timer.fired(generation: armed.generation, at: .seconds(10))
    timer.fired(generation: armed.generation &+ 1, at: .seconds(10))
    let ended = timer.takeDue()
    #expect(!ended)
  }

  @Test func callbacksAndWorkComeOutOnceInOrder() {
    let seen = LockBox<[Int]>([])
    var timer = AdapterTimer(maxWait: nil)
    timer.send { seen.withLock { $0.append(1) } }
    timer.run { seen.withLock { $0.append(3) } }
    timer.send { seen.withLock { $0.append(2) } }
    for callback in timer.takeCallbacks() { callback() }
    for work in timer.takeAfterLock().work { work() }
    let (callbacksLeft, workLeft) = (timer.takeCallbacks(), timer.takeAfterLock().work)
    #expect(seen.withLock { $0 } == [1, 2, 3])
    #expect(callbacksLeft.isEmpty && workLeft.isEmpty)
  }

  @Test func readingsNeverGoBack() {
    var timer = AdapterTimer(maxWait: nil)
    let readings = [Duration.seconds(2), .seconds(1), .seconds(3)].map { timer.observe($0) }
    #expect(readings == [.seconds(2), .seconds(2), .seconds(3)])
  }
}
