import Testing

@testable import DelayedPreemptiveDispatch

/// The adapters' rules for their timer, without time or threads: which firing is due, how a
/// round is carried over a raced firing, and that actions come out once, in the order decided.
@Suite struct TimerPlanTests {
  /// A timer action, comparable.
  enum Step: Equatable {
    case delay(Duration, UInt64)
    case cancel
  }

  /// The delays and cancellations in `actions`, in order.
  static func steps(_ actions: [TimerPlan.Action]?) -> [Step] {
    (actions ?? []).compactMap { action in
      switch action {
      case .delay(let delay, let sequence): return .delay(delay, sequence)
      case .cancel: return .cancel
      case .send, .run: return nil
      }
    }
  }

  @Test func firingOfLatestSubmissionIsDue() {
    var plan = TimerPlan(maxWait: .milliseconds(5))
    plan.arm(after: .milliseconds(3), at: .zero)
    plan.arm(after: .milliseconds(3), at: .milliseconds(1))
    let isDue = plan.fired(2, at: .milliseconds(4))
    #expect(isDue)
    #expect(plan.claim() != nil)
  }

  @Test func racedFiringBeforeDeadlineCarriesRoundCappedAtItsDeadline() {
    var plan = TimerPlan(maxWait: .milliseconds(5))
    plan.arm(after: .milliseconds(3), at: .zero)
    _ = plan.claim()
    plan.arm(after: .milliseconds(3), at: .milliseconds(3))  // races #1's firing
    let isDue = plan.fired(1, at: .milliseconds(3))
    // #2 starts a burst of its own, and #3 caps it at the round's deadline, 5 ms.
    let performed = Self.steps(plan.next())
    let done = plan.next()
    plan.arm(after: .milliseconds(3), at: .milliseconds(4))
    let capped = Self.steps(plan.claim())
    #expect(!isDue)
    #expect(performed == [.delay(.milliseconds(3), 2), .delay(.milliseconds(2), 3)])
    #expect(done == nil)
    #expect(capped == [.delay(.milliseconds(1), 4)])
  }

  @Test func racedFiringPastDeadlineIsDueAndCancelsTheRacersBurst() {
    var plan = TimerPlan(maxWait: .milliseconds(5))
    plan.arm(after: .milliseconds(3), at: .zero)
    plan.arm(after: .milliseconds(3), at: .milliseconds(4))
    plan.arm(after: .milliseconds(3), at: .milliseconds(5))  // races #2's firing at 5 ms
    _ = plan.claim()
    let isDue = plan.fired(2, at: .milliseconds(5))
    let performed = Self.steps(plan.next())
    plan.endRound()
    // The next submission opens a new round, with nothing to cap.
    plan.arm(after: .milliseconds(3), at: .milliseconds(6))
    let next = Self.steps(plan.next())
    #expect(isDue)
    #expect(performed == [.cancel])
    #expect(next == [.delay(.milliseconds(3), 5)])
  }

  @Test func racedFiringWithoutMaxWaitLeavesRoundToTheRacersBurst() {
    var plan = TimerPlan(maxWait: nil)
    plan.arm(after: .seconds(10), at: .zero)
    plan.cancel()
    _ = plan.claim()
    let isDue = plan.fired(1, at: .seconds(10))
    let performed = plan.next()
    #expect(!isDue)
    #expect(performed == nil)
  }

  @Test func onlyOneCallerPerformsAndGetsEveryActionInOrder() {
    var plan = TimerPlan(maxWait: nil)
    plan.arm(after: .seconds(1), at: .zero)
    let first = Self.steps(plan.claim())
    plan.arm(after: .seconds(2), at: .zero)
    plan.cancel()
    let second = plan.claim()
    let meanwhile = Self.steps(plan.next())
    let done = plan.next()
    plan.arm(after: .seconds(3), at: .zero)
    let later = Self.steps(plan.claim())
    #expect(first == [.delay(.seconds(1), 1)])
    #expect(second == nil, "the first caller is performing")
    #expect(meanwhile == [.delay(.seconds(2), 2), .cancel])
    #expect(done == nil)
    #expect(later == [.delay(.seconds(3), 4)])
  }

  @Test func readingsNeverGoBack() {
    var plan = TimerPlan(maxWait: nil)
    let readings = [Duration.seconds(2), .seconds(1), .seconds(3)].map { plan.observe($0) }
    #expect(readings == [.seconds(2), .seconds(2), .seconds(3)])
  }
}
