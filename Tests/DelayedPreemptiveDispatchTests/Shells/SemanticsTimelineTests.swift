import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// The timelines of the Semantics article, as marble tests on every shell that follows the
/// single-burst rules. One tick is 100 ms (the article draws four columns per tick); input
/// letters are submissions, `*` is `flush()`, `x` is `cancel()`; output letters are the tasks
/// that ran.
@Suite struct SemanticsTimelineTests {
  @Test(arguments: ShellKind.allCases)
  func quietPeriodOfThreeTicks(_ kind: ShellKind) async {
    let output = await ShellMarbles().run("ab-c---d----|", on: kind, every: .milliseconds(300))
    #expect(output == "------c---d-|")
  }

  /// "Extend or restart the deadline": A asks for 0.5 s at 0.0, B for 0.1 s at 0.2.
  @Test(arguments: ShellKind.allCases)
  func extendOrRestartTheDeadline(_ kind: ShellKind) async {
    let delays: (Character) -> Duration = { $0 == "A" ? .milliseconds(500) : .milliseconds(100) }
    let extend = await ShellMarbles().run("A-B----", on: kind, delay: delays)
    #expect(extend == "-----B-")
    let restart = await ShellMarbles().run(
      "A-B----", on: kind, options: DelayOptions(deadlinePolicy: .restart), delay: delays)
    #expect(restart == "---B---")
  }

  /// "Bound a burst with maxWait": `delay(0.3)` every 0.2 s is never quiet for 0.3 s.
  @Test(arguments: ShellKind.allCases)
  func boundABurstWithMaxWait(_ kind: ShellKind) async {
    let unbounded = await ShellMarbles().run(
      "A-B-C-D-E-F----", on: kind, every: .milliseconds(300))
    #expect(unbounded == "-------------F-")
    let bounded = await ShellMarbles().run(
      "A-B-C-D-E-F----", on: kind, options: DelayOptions(maxWait: .milliseconds(500)),
      every: .milliseconds(300))
    #expect(bounded == "-----C-----F---")
  }

  /// "Run at the start with leading": A runs at once, C at the deadline it set, D at once in
  /// a burst of its own.
  @Test(arguments: ShellKind.allCases)
  func runAtTheStartWithLeading(_ kind: ShellKind) async {
    let output = await ShellMarbles().run(
      "ABC-----D---", on: kind, options: DelayOptions(leading: true), every: .milliseconds(300))
    #expect(output == "A----C--D---")
  }

  /// "End a burst early with flush or cancel": B runs at the flush, C never runs, D starts a
  /// fresh burst.
  @Test(arguments: ShellKind.allCases)
  func endABurstEarlyWithFlushOrCancel(_ kind: ShellKind) async {
    let output = await ShellMarbles().run("AB*-C-xD-----", on: kind, every: .milliseconds(500))
    #expect(output == "--B---------D")
  }

  /// "One timer per instance": a later deadline re-arms the one timer, an earlier one (under
  /// `.restart`) arms one more, and a burst after `cancel()` adopts the timer in flight.
  @Test(arguments: ShellKind.allCases)
  func oneTimerPerInstance(_ kind: ShellKind) async {
    let later = await ShellMarbles().run("A-B---", on: kind, every: .milliseconds(300))
    #expect(later == "-----B")
    let adopted = await ShellMarbles().run("AxB----", on: kind, every: .milliseconds(300))
    #expect(adopted == "-----B-")
  }

  /// "Tickets": A and B are preempted, C executes, D is cancelled.
  @Test(arguments: ShellKind.allCases)
  func tickets(_ kind: ShellKind) async {
    let marbles = ShellMarbles()
    let shell = kind.make(clock: marbles.clock, ran: marbles.ran)
    var tickets: [DelayTicket] = []
    for _ in 0..<3 {
      tickets.append(await shell.delay(.milliseconds(500), "\(tickets.count)"))
      await marbles.clock.advance(by: .milliseconds(100))
    }
    await marbles.clock.advance(by: .milliseconds(800))
    tickets.append(await shell.delay(.milliseconds(500), "3"))
    await marbles.clock.advance(by: .milliseconds(100))
    await shell.cancel()
    var outcomes: [DelayOutcome] = []
    for ticket in tickets { outcomes.append(await ticket.outcome) }
    #expect(outcomes == [.preempted, .preempted, .executed, .cancelled])
    #expect(marbles.ran.all == ["2"])
  }
}
