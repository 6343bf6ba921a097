import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// Throttling (rules T1-T6) on marble timelines: one tick is one second of a `ManualClock` for
/// the streams, 100 ms for the shells.
@Suite struct ThrottledMarbleTests {
  let clock = ManualClock()

  // MARK: - swift-async-algorithms' TestThrottle inputs, with what T1-T5 give

  /// One input of swift-async-algorithms' `TestThrottle`, the interval in ticks, and what
  /// `throttled` emits for it with `latest: true` and with `latest: false`.
  struct Case: Sendable, CustomTestStringConvertible {
    var input: MarbleDiagram
    var interval: Int
    var latest: MarbleDiagram
    var first: MarbleDiagram
    var testDescription: String { "\(input) every \(interval)" }
  }

  /// Where these differ from swift-async-algorithms' outputs, it is T4: an interval's element
  /// is emitted by the timer at the interval's end, not when the next element arrives, so no
  /// emission comes later than one interval after the previous one.
  static let asyncAlgorithmsInputs: [Case] = [
    Case(input: "abcdefghijk|", interval: 0, latest: "abcdefghijk|", first: "abcdefghijk|"),
    Case(input: "abcdefghijk|", interval: 1, latest: "abcdefghijk|", first: "abcdefghijk|"),
    Case(input: "abcdefghijk|", interval: 2, latest: "a-b-d-f-h-j[k|]", first: "a-b-c-e-g-i[k|]"),
    Case(input: "abcdefghijk|", interval: 3, latest: "a--c--f--i-[k|]", first: "a--b--d--g-[j|]"),
    Case(input: "abcdef^hijk|", interval: 2, latest: "a-b-d-[f^]-----", first: "a-b-c-[e^]-----"),
    Case(
      input: "-a-b-c-d-e-f-g-h-i-j-k-|", interval: 1,
      latest: "-a-b-c-d-e-f-g-h-i-j-k-|", first: "-a-b-c-d-e-f-g-h-i-j-k-|"),
    Case(
      input: "-a-b-c-d-e-f-g-h-i-j-k-|", interval: 2,
      latest: "-a-b-c-d-e-f-g-h-i-j-k-|", first: "-a-b-c-d-e-f-g-h-i-j-k-|"),
    Case(
      input: "--a--b--c--d--e--f--g|", interval: 2,
      latest: "--a--b--c--d--e--f--g|", first: "--a--b--c--d--e--f--g|"),
    Case(
      input: "-a-b-c-d-e-f-g-h-i-j-k-|", interval: 3,
      latest: "-a--b--c--e--f--h--i--k|", first: "-a--b--c--d--f--g--i--j|"),
    Case(
      input: "abcdefghijkl|", interval: 3, latest: "a--c--f--i--[l|]", first: "a--b--d--g--[j|]"),
  ]

  @Test(arguments: asyncAlgorithmsInputs)
  func asyncAlgorithmsThrottleInputs(_ test: Case) async {
    let interval = Duration.seconds(test.interval)
    let latest = await clock.throttle(test.input, for: interval)
    #expect(latest == test.latest, "\(latest)")
    let first = await clock.throttle(test.input, for: interval, latest: false)
    #expect(first == test.first, "\(first)")
  }

  /// `latest: true` is `debounced(for: .zero, options: .throttle(interval))`.
  @Test(arguments: asyncAlgorithmsInputs)
  func throttledIsAZeroDebounceWithSpacing(_ test: Case) async {
    let throttled = await clock.throttle(test.input, for: .seconds(test.interval))
    let debounced = await ManualClock().debounce(
      test.input, for: .zero, options: .throttle(.seconds(test.interval)))
    #expect(throttled == debounced)
  }

  // MARK: - The rules, on debounced streams

  /// T1: a burst that would be due sooner than the spacing allows waits for it, and takes
  /// submissions meanwhile (`c` is replaced by `d`).
  @Test func aBurstDueTooSoonWaitsForTheSpacingAndKeepsTakingSubmissions() async {
    let input: MarbleDiagram = "a-b-c-d---|"
    #expect(await clock.debounce(input, for: .seconds(1)) == "-a-b-c-d--|")
    let spaced = DelayOptions(minimumSpacing: .seconds(3))
    #expect(await ManualClock().debounce(input, for: .seconds(1), options: spaced) == "-a--b--d--|")
  }

  /// T2: `leading` runs at once only when no run started within the spacing.
  @Test func leadingRunsAtOnceOnlyOutsideTheSpacing() async {
    let options = DelayOptions(leading: true, minimumSpacing: .seconds(3))
    #expect(await clock.debounce("a-b---c|", for: .seconds(1), options: options) == "a--b--c|")
  }

  /// T2: a burst full at `maxSubmissions` is due at once, but no sooner than the spacing.
  @Test func aFullBurstWaitsForTheSpacing() async {
    let options = DelayOptions(maxSubmissions: 2, minimumSpacing: .seconds(3))
    #expect(await clock.debounce("abcd-----|", for: .seconds(5), options: options) == "-b--d----|")
  }

  /// T4: with a zero delay, at most one emission per interval, the first at once, the latest of
  /// each interval at its end, never later.
  @Test func throttleEmitsTheFirstAtOnceAndTheLatestAtEachIntervalsEnd() async {
    let options = DelayOptions.throttle(.seconds(3))
    #expect(await clock.debounce("ab------c-d|", for: .zero, options: options) == "a--b----c--[d|]")
  }

  // MARK: - The rules, on every shell

  /// T4 on the queue, the actor and the keyed forms: the same timeline as the stream's.
  @Test(arguments: ShellKind.allCases)
  func throttleOnEveryShell(_ kind: ShellKind) async {
    let output = await ShellMarbles().run(
      "abcdefghijk|", on: kind, options: .throttle(.milliseconds(200)), every: .zero)
    #expect(output == "a-b-d-f-h-j[k|]")
  }

  /// T3: `flush` runs the pending burst at once, and the spacing counts from that run.
  @Test(arguments: ShellKind.allCases)
  func flushIgnoresTheSpacingAndTheNextRunCountsFromIt(_ kind: ShellKind) async {
    let output = await ShellMarbles().run(
      "ab*c---|", on: kind, options: .throttle(.milliseconds(300)), every: .zero)
    #expect(output == "a-b--c-|")
  }

  /// T3: `cancel` drops the pending burst; the spacing still counts from the previous run.
  @Test(arguments: ShellKind.allCases)
  func cancelKeepsTheSpacingOfThePreviousRun(_ kind: ShellKind) async {
    let output = await ShellMarbles().run(
      "abxc----|", on: kind, options: .throttle(.milliseconds(400)), every: .zero)
    #expect(output == "a---c---|")
  }
}
