import Testing

@testable import DelayedPreemptiveDispatch

/// Every rule of the state machine, without time or threads.
@Suite struct StateMachineRuleTests {
  typealias Run = MachineHarness.Run

  @Test func extendPolicyKeepsLaterDeadline() {
    var harness = MachineHarness()
    let first = harness.delay(500, "A")
    let second = harness.delay(100, "B")
    harness.advance(by: 499)
    #expect(harness.runs.isEmpty)
    harness.advance(by: 1)
    #expect(harness.runs == [Run(work: "B", at: 500)])
    #expect(harness.outcomes[first!] == .preempted)
    #expect(harness.outcomes[second!] == .executed)
  }

  @Test func extendPolicyMovesDeadlineLaterAndRearmsOnlyOnFire() {
    var harness = MachineHarness()
    harness.delay(100, "A")
    harness.advance(by: 50)
    harness.delay(100, "B")
    #expect(harness.armedByJoin == 0)
    harness.advance(by: 99)
    #expect(harness.runs.isEmpty)
    harness.advance(by: 1)
    #expect(harness.runs == [Run(work: "B", at: 150)])
  }

  @Test func restartPolicyLetsNewestDelaySetDeadline() {
    var harness = MachineHarness(options: DelayOptions(deadlinePolicy: .restart))
    harness.delay(500, "A")
    harness.advance(by: 100)
    harness.delay(100, "B")
    #expect(harness.armedByJoin == 1)
    harness.advance(by: 100)
    #expect(harness.runs == [Run(work: "B", at: 200)])
    harness.advance(by: 1_000)
    #expect(harness.runs.count == 1)
  }

  @Test func restartWithinToleranceKeepsArmedTimer() {
    let options = DelayOptions(deadlinePolicy: .restart, tolerance: .milliseconds(20))
    var harness = MachineHarness(options: options)
    harness.delay(100, "A")
    harness.delay(85, "B")
    #expect(harness.armedByJoin == 0)
    harness.delay(50, "C")
    #expect(harness.armedByJoin == 1)
    harness.advance(by: 200)
    #expect(harness.runs == [Run(work: "C", at: 50)])
  }

  @Test func taskNilReusesTaskGivenLast() {
    var harness = MachineHarness(work: "init")
    harness.delay(10)
    harness.advance(by: 10)
    harness.delay(10, "B")
    harness.advance(by: 10)
    harness.delay(10)
    harness.advance(by: 10)
    #expect(harness.runs.map(\.work) == ["init", "B", "B"])
  }

  @Test func noTaskEverGivenRejectsSubmission() {
    var harness = MachineHarness()
    #expect(harness.delay(10) == nil)
    #expect(!harness.machine.isPending)
    harness.advance(by: 100)
    #expect(harness.runs.isEmpty)
  }

  @Test func negativeDelayMeansDueNow() {
    var harness = MachineHarness()
    harness.advance(by: 40)
    harness.delay(-100, "A")
    harness.advance(by: 0)
    #expect(harness.runs == [Run(work: "A", at: 40)])
  }

  @Test func maxWaitBoundsConstantPreemption() {
    var harness = MachineHarness(options: DelayOptions(maxWait: .milliseconds(250)))
    for _ in 0..<10 {
      harness.delay(100, "A")
      harness.advance(by: 50)
    }
    #expect(harness.runs.first == Run(work: "A", at: 250))
    #expect(harness.runs.count >= 2)
  }

  @Test func maxWaitEndsBurstSoNextSubmissionStartsFresh() {
    var harness = MachineHarness(options: DelayOptions(maxWait: .milliseconds(100)))
    harness.delay(80, "A")
    harness.advance(by: 60)
    harness.delay(80, "B")
    harness.advance(by: 40)
    #expect(harness.runs == [Run(work: "B", at: 100)])
    harness.delay(80, "C")
    harness.advance(by: 80)
    #expect(harness.runs.last == Run(work: "C", at: 180))
  }

  @Test func leadingRunsFirstAtOnceAndTrailingOnlyAfterMoreSubmissions() {
    var harness = MachineHarness(options: DelayOptions(leading: true))
    let first = harness.delay(100, "A")
    #expect(harness.runs == [Run(work: "A", at: 0)])
    harness.advance(by: 100)
    #expect(harness.runs.count == 1)
    #expect(!harness.machine.isPending)
    #expect(harness.outcomes[first!] == .executed)

    harness.delay(100, "B")
    let middle = harness.delay(100, "C")
    let last = harness.delay(100, "D")
    harness.advance(by: 100)
    #expect(harness.runs.map(\.work) == ["A", "B", "D"])
    #expect(harness.outcomes[middle!] == .preempted)
    #expect(harness.outcomes[last!] == .executed)
  }

  @Test func flushRunsPendingTaskAndEndsBurst() {
    var harness = MachineHarness()
    let seq = harness.delay(100, "A")
    harness.flush()
    #expect(harness.runs == [Run(work: "A", at: 0)])
    #expect(harness.outcomes[seq!] == .executed)
    #expect(!harness.machine.isPending)
    harness.advance(by: 500)
    #expect(harness.runs.count == 1)
  }

  @Test func flushWhenIdleDoesNothing() {
    var harness = MachineHarness(work: "A")
    harness.flush()
    #expect(harness.runs.isEmpty)
  }

  @Test func flushOfLeadingOnlyBurstRunsNothingMore() {
    var harness = MachineHarness(options: DelayOptions(leading: true))
    harness.delay(100, "A")
    harness.flush()
    #expect(harness.runs.count == 1)
    #expect(!harness.machine.isPending)
  }

  @Test func cancelResolvesLastAsCancelledAndStaleTimerDoesNothing() {
    var harness = MachineHarness()
    let first = harness.delay(100, "A")
    let second = harness.delay(100, "B")
    harness.cancel()
    #expect(harness.outcomes[first!] == .preempted)
    #expect(harness.outcomes[second!] == .cancelled)
    harness.advance(by: 500)
    #expect(harness.runs.isEmpty)
  }

  @Test func cancelThenDelayStartsFresh() {
    var harness = MachineHarness()
    harness.delay(1_000, "A")
    harness.advance(by: 500)
    harness.cancel()
    harness.delay(200, "B")
    harness.advance(by: 199)
    #expect(harness.runs.isEmpty)
    harness.advance(by: 1)
    #expect(harness.runs == [Run(work: "B", at: 700)])
    harness.advance(by: 1_000)
    #expect(harness.runs.count == 1)
  }

  @Test func delayCancelLoopKeepsOneTimerInFlight() {
    var harness = MachineHarness(work: "A")
    for _ in 0..<500 {
      harness.delay(1_000)
      harness.cancel()
      harness.advance(by: 1)
    }
    #expect(harness.timers.count == 1)
    // At 500 the burst adopts the timer armed for 1000, which re-arms for 1500.
    harness.delay(1_000)
    harness.advance(by: 999)
    #expect(harness.runs.isEmpty)
    harness.advance(by: 1)
    #expect(harness.runs == [Run(work: "A", at: 1_500)])
    #expect(harness.timers.isEmpty)
  }

  @Test func newBurstWithEarlierDeadlineArmsItsOwnTimer() {
    var harness = MachineHarness(work: "A")
    harness.delay(1_000)
    harness.cancel()
    harness.delay(100)
    #expect(harness.timers.count == 2)
    harness.advance(by: 100)
    #expect(harness.runs == [Run(work: "A", at: 100)])
    harness.advance(by: 1_000)
    #expect(harness.runs.count == 1)
    #expect(harness.timers.isEmpty)
  }

  @Test func releaseCancelsAndForgetsTask() {
    var harness = MachineHarness(work: "A")
    harness.delay(100)
    var machine = harness.machine
    let end = machine.release()
    #expect(end?.lastSeq == 0)
    #expect(machine.lastWork == nil)
    #expect(!machine.isPending)
  }

  @Test func staleGenerationIsIgnored() {
    let rules = BurstRules(DelayOptions(deadlinePolicy: .restart))
    var ids = BurstIDs()
    var machine = MachineHarness.Machine(work: "A")
    guard
      case .started(_, let first?, _) = machine.delay(
        at: MachineHarness.tick(0), until: MachineHarness.tick(100), work: nil, rules: rules,
        ids: &ids)
    else { return #expect(Bool(false)) }
    guard
      case .joined(_, let second?) = machine.delay(
        at: MachineHarness.tick(0), until: MachineHarness.tick(50), work: nil, rules: rules,
        ids: &ids)
    else { return #expect(Bool(false)) }
    guard
      case .stale = machine.timerFired(
        at: first.deadline, generation: first.generation, rules: rules, ids: &ids)
    else { return #expect(Bool(false)) }
    guard
      case .ended("A", _) = machine.timerFired(
        at: second.deadline, generation: second.generation, rules: rules, ids: &ids)
    else { return #expect(Bool(false)) }
  }

  @Test func hugeDelaySaturatesInsteadOfTrapping() {
    var harness = MachineHarness(work: "A")
    let far = TimelineInstant(nanoseconds: .max - 5).advanced(by: .seconds(1))
    #expect(far.nanoseconds == .max)
    harness.delay(Int64.max / 2_000_000)
    harness.advance(by: 1_000_000)
    #expect(harness.runs.isEmpty)
    harness.flush()
    #expect(harness.runs.count == 1)
  }

  @Test func everySubmissionResolvesExactlyOnce() {
    var harness = MachineHarness(options: DelayOptions(leading: true))
    for index in 0..<50 {
      harness.delay(Int64(index % 7) * 10, "W\(index)")
      if index % 11 == 0 { harness.cancel() }
      if index % 13 == 0 { harness.flush() }
      harness.advance(by: Int64(index % 5) * 10)
    }
    harness.cancel()
    #expect(harness.outcomes.count == 50)
    harness.recheckKnownOutcomes()
    #expect(harness.duplicateResolutions.isEmpty)
  }
}
