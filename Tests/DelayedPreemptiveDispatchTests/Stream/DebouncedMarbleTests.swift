import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// `debounced` on marble timelines (rules S1 and S2): one tick is one second of a
/// `ManualClock`, and the quiet period is three ticks unless a test says otherwise.
@Suite struct DebouncedMarbleTests {
  let clock = ManualClock()

  func run(
    _ input: MarbleDiagram, quiet: Int = 3, options: DelayOptions = DelayOptions()
  ) async -> MarbleDiagram {
    await clock.debounce(input, for: .seconds(quiet), options: options)
  }

  // MARK: - S1, one test per option

  @Test func lastElementOfABurstIsEmittedAtItsDeadline() async {
    #expect(await run("ab-c---d----|") == "------c---d-|")
  }

  @Test(arguments: [DeadlinePolicy.extend, .restart])
  func bothPoliciesEmitAtLastElementPlusInterval(_ policy: DeadlinePolicy) async {
    // With one interval for every element, the newest element's deadline is always the latest,
    // so `.restart` and `.extend` draw the same timeline.
    let options = DelayOptions(deadlinePolicy: policy)
    #expect(await run("ab-c---d----|", options: options) == "------c---d-|")
    #expect(await run("a-b-c-d-------|", options: options) == "---------d----|")
  }

  @Test func maxWaitEmitsTheLatestElementDuringAnEndlessBurst() async {
    let input: MarbleDiagram = "abcdefghij|"
    #expect(await run(input) == "----------[j|]")
    #expect(await run(input, options: DelayOptions(maxWait: .seconds(4))) == "----d---h-[j|]")
  }

  /// `maxSubmissions`: the element that fills a burst is emitted at once.
  @Test func maxSubmissionsEmitsTheElementThatFillsABurstAtOnce() async {
    let options = DelayOptions(maxSubmissions: 3)
    #expect(await run("abc-d---|", options: options) == "--c----d|")
    #expect(await run("abcdefg-----|", options: options) == "--c--f---g--|")
  }

  @Test func maxWaitLongerThanTheQuietPeriodChangesNothing() async {
    let options = DelayOptions(maxWait: .seconds(10))
    #expect(await run("ab-c---d----|", options: options) == "------c---d-|")
  }

  @Test func leadingEmitsTheFirstElementAtOnceAndATrailingOneOnlyAfterMore() async {
    let options = DelayOptions(leading: true)
    #expect(await run("ab-c---d----|", options: options) == "a-----cd----|")
  }

  @Test func leadingWithMaxWaitEmitsAtBothEnds() async {
    let options = DelayOptions(maxWait: .seconds(4), leading: true)
    #expect(await run("abcdefghij|", options: options) == "a---[de]---[hi]-[j|]")
  }

  /// T5: an element due at the current instant is emitted without waiting for the clock, at
  /// the tick it arrives (it was emitted one tick late: "-ab-[c|]").
  @Test func zeroIntervalEmitsEachElementAtTheTickItArrives() async {
    #expect(await run("ab-c|", quiet: 0) == "ab-c|")
  }

  // MARK: - S2

  @Test func finishingEmitsThePendingElementAtOnceThenFinishes() async {
    #expect(await run("ab-|") == "---[b|]")
    #expect(await run("ab---|") == "----b|")
  }

  @Test func throwingEmitsThePendingElementFirstThenTheError() async {
    #expect(await run("ab-^") == "---[b^]")
    #expect(await run("ab----^") == "----b-^")
  }

  @Test func endingWithLeadingAloneEmitsNothingMore() async {
    #expect(await run("a-|", options: DelayOptions(leading: true)) == "a-|")
  }

  @Test func inputThatNeverEndsDrawsNoEnd() async {
    #expect(await run("ab-------") == "----b----")
  }

  // MARK: - swift-async-algorithms' debounce scenarios (TestDebounce.swift), default options

  @Test func asyncAlgorithmsDelayingValues() async {
    #expect(await run("abcd----e---f-g----|") == "------d----e-----g-|")
  }

  @Test func asyncAlgorithmsDanglingLastValue() async {
    #expect(await run("abcd----e---f-g-|") == "------d----e----[g|]")
  }

  @Test func asyncAlgorithmsFinishDoesNotWait() async {
    #expect(await run("a|") == "-[a|]")
  }

  @Test func asyncAlgorithmsThrowKeepsThePendingElementHere() async {
    // async-algorithms draws "-^": it drops the pending element. Rule S2 emits it first.
    #expect(await run("a^") == "-[a^]")
  }

  @Test func asyncAlgorithmsNoValues() async {
    #expect(await run("----|") == "----|")
  }

  // MARK: - Determinism

  @Test func theSameRunGivesTheSameTimelineEveryTime() async {
    let options = DelayOptions(maxWait: .seconds(5), leading: true)
    let first = await run("ab-cdef--g-hijk---l|", quiet: 2, options: options)
    for _ in 0..<20 {
      #expect(await run("ab-cdef--g-hijk---l|", quiet: 2, options: options) == first)
    }
  }
}
