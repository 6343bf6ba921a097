import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// A test driven by `ManualClock` gives the same result on every run. The scenarios mix the
/// queue and the actor, every option, cancel and flush; each repetition's trace must equal the
/// first. `DPD_LONG_TESTS=1` repeats them 1,000 times (`scripts/long-tests.sh` also loads both
/// cores meanwhile).
@Suite struct DeterminismTests {
  /// One scenario: what ran, at which instant, and how every ticket resolved. The queue and
  /// the actor keep separate logs: flushed and leading runs are asynchronous, so the order
  /// between two independent instances is not defined, only the order within each.
  static func trace(options: DelayOptions) async -> [String] {
    let clock = ManualClock()
    let queueLog = Recorder<String>()
    let actorLog = Recorder<String>()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock, options: options)
    let actor = DelayedPreemptiveActor(clock: clock, options: options)
    var tickets: [DelayTicket] = []
    for step in 0..<40 {
      let name = "s\(step)"
      let delay = Duration.milliseconds((step * 37) % 250)
      // A leading run starts at once, not on the clock: await it before time moves on.
      let queueStartsBurst = !queue.isPending
      let actorStartsBurst = await !actor.isPending
      let queued = queue.delay(for: delay) {
        queueLog.append("queue \(name) at \(clock.now.offset)")
      }
      let acted = await actor.delay(delay) {
        actorLog.append("actor \(name) at \(clock.now.offset)")
      }
      if options.leading, queueStartsBurst { _ = await queued.outcome }
      if options.leading, actorStartsBurst { _ = await acted.outcome }
      tickets += [queued, acted]
      switch step % 9 {
      case 4:
        queue.cancel()
        await actor.cancel()
      case 7:
        queue.flush()
        await actor.flush()
        _ = await tickets[tickets.count - 2].outcome  // the queue's flushed run has returned
      default: break
      }
      await clock.advance(by: .milliseconds((step * 53) % 120))
    }
    await clock.advance(by: .seconds(5))
    var outcomes: [String] = []
    for ticket in tickets { outcomes.append("\(await ticket.outcome)") }
    return queueLog.all + actorLog.all + outcomes
  }

  @Test(arguments: [
    DelayOptions(),
    DelayOptions(deadlinePolicy: .restart),
    DelayOptions(maxWait: .milliseconds(300)),
    DelayOptions(deadlinePolicy: .restart, maxWait: .milliseconds(200), leading: true),
  ])
  func manualClockScenariosRepeatIdentically(options: DelayOptions) async {
    let first = await Self.trace(options: options)
    #expect(first.count > 80)
    var divergences = 0
    for _ in 1..<TestScale.determinismRepetitions {
      let trace = await Self.trace(options: options)
      guard trace != first else { continue }
      divergences += 1
      if divergences == 1 {
        let index =
          trace.indices.first { $0 >= first.count || trace[$0] != first[$0] } ?? trace.count
        Issue.record(
          "first divergence at line \(index): \(trace[max(0, index - 2)..<min(trace.count, index + 3)]) vs \(first[max(0, index - 2)..<min(first.count, index + 3)])"
        )
      }
    }
    #expect(divergences == 0)
  }
}
