import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// A run that a submission started at once (rule T5) and that sleeps on the same `ManualClock`
/// lets `advance` go on, and resumes at its sleep's deadline, as a run that a timer started
/// does. Every `advance` here goes through ``returns(_:)``, so that a regression, an `advance`
/// waiting for a run that waits for the clock, fails at the time limit instead of hanging, and
/// ends the test (no later `advance` may overlap the one left behind).
@Suite(.timeLimit(.minutes(1))) struct ManualClockSleepingRunTests {
  let clock = ManualClock()
  let log = Recorder<String>()
  /// Where every sleep here ends: a fixed instant, so that a sleep that starts after an
  /// `advance` still ends there.
  static let oneSecond = ManualClock.Instant(offset: .seconds(1))

  /// How a submission starts a run at once (T5).
  enum Start: Sendable, CaseIterable, CustomTestStringConvertible {
    /// The program: a zero delay with `.throttle(.seconds(2))`.
    case zeroDelayThrottled
    /// A `leading` run; its burst, which has only that submission, ends at 300 ms meanwhile.
    case leading

    var options: DelayOptions {
      self == .leading ? DelayOptions(leading: true) : .throttle(.seconds(2))
    }
    var delay: Duration { self == .leading ? .milliseconds(300) : .zero }
    var testDescription: String { self == .leading ? "leading" : "zero delay, throttled" }
  }

  /// On the actor and the keyed actor, a run that a submission started at once sleeps on the
  /// clock for a second: the first `advance` returns while it sleeps, the second resumes it.
  @Test(arguments: ShellKind.actors, Start.allCases)
  func runStartedBySubmissionSleepingOnTheClockLetsAdvanceGoOn(
    _ kind: ShellKind, _ start: Start
  ) async throws {
    let shell = kind.make(
      clock: clock, options: start.options, ran: log,
      body: { [clock, log] name in
        log.append("\(name) at \(clock.now.offset)")
        try? await clock.sleep(until: Self.oneSecond)
        log.append("\(name) woke at \(clock.now.offset)")
      })
    let ticket = await shell.delay(start.delay, "A")
    await log.waitUntilCount(1)
    try #require(await returns { await clock.advance(by: .milliseconds(500)) })
    #expect(log.elements == ["A at 0.0 seconds"])
    try #require(await returns { await clock.advance(by: .milliseconds(500)) })
    #expect(log.elements == ["A at 0.0 seconds", "A woke at 1.0 seconds"])
    #expect(await ticket.outcome == .executed)
  }

  /// The GCD queues' tasks are synchronous: one that waits on the clock does so in a task it
  /// starts, and the queue's run returns at once. The advance goes on, and the clock resumes
  /// that task at its deadline.
  @Test(arguments: [ShellKind.queue, .keyedQueue])
  func queueTaskWhoseTaskSleepsOnTheClockLetsAdvanceGoOn(_ kind: ShellKind) async throws {
    let clock = clock
    let log = log
    let sleeper = Recorder<Task<Void, Never>>()
    let start: @Sendable () -> Void = {
      log.append("at \(clock.now.offset)")
      sleeper.append(
        Task {
          try? await clock.sleep(until: Self.oneSecond)
          log.append("woke at \(clock.now.offset)")
        })
    }
    let ticket: DelayTicket
    switch kind {
    case .queue:
      let queue = DelayedPreemptiveDispatchQueue(clock: clock, options: .throttle(.seconds(2)))
      ticket = queue.delay(for: .zero, task: start)
    default:
      let queue = KeyedDelayedPreemptiveDispatchQueue<Int, Int>(
        clock: clock, options: .throttle(.seconds(2))
      ) { _, _ in start() }
      ticket = queue.delay(0, for: .zero, value: 0)
    }
    #expect(await ticket.outcome == .executed)
    try #require(await returns { await clock.advance(by: .milliseconds(500)) })
    #expect(log.elements == ["at 0.0 seconds"])
    try #require(await returns { await clock.advance(by: .milliseconds(500)) })
    await sleeper.elements[0].value
    #expect(log.elements == ["at 0.0 seconds", "woke at 1.0 seconds"])
  }

  /// `throttled`: the first element is emitted at once, and the consumer's body sleeps on the
  /// clock for a second before it asks for the next one.
  @Test func throttledElementWhoseConsumerSleepsOnTheClockLetsAdvanceGoOn() async throws {
    let (base, input) = AsyncStream<String>.makeStream()
    let clock = clock
    let log = log
    let consumer = Task {
      for await element in base.throttled(for: .seconds(2), clock: clock) {
        log.append("\(element) at \(clock.now.offset)")
        try? await clock.sleep(until: Self.oneSecond)
        log.append("\(element) woke at \(clock.now.offset)")
      }
    }
    input.yield("a")
    await log.waitUntilCount(1)
    try #require(await returns { await clock.advance(by: .milliseconds(500)) })
    #expect(log.elements == ["a at 0.0 seconds"])
    try #require(await returns { await clock.advance(by: .milliseconds(500)) })
    await log.waitUntilCount(2)
    #expect(log.elements == ["a at 0.0 seconds", "a woke at 1.0 seconds"])
    input.finish()
    await consumer.value
  }

  /// Whether `body` returned before the test's time limit cancelled the test: an `advance` that
  /// never returns is left behind, and the test fails instead of hanging.
  func returns(_ body: @escaping @Sendable () async -> Void) async -> Bool {
    let outcome = LockBox<(returned: Bool?, waiter: CheckedContinuation<Void, Never>?)>((nil, nil))
    let finish: @Sendable (Bool) -> Void = { returned in
      let waiter = outcome.withLock { state -> CheckedContinuation<Void, Never>? in
        guard state.returned == nil else { return nil }
        state.returned = returned
        return state.waiter.take()
      }
      waiter?.resume()
    }
    Task {
      await body()
      finish(true)
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { waiter in
        let done = outcome.withLock { state in
          if state.returned == nil { state.waiter = waiter }
          return state.returned != nil
        }
        if done { waiter.resume() }
      }
    } onCancel: {
      finish(false)
    }
    return outcome.withLock { $0.returned } ?? false
  }
}
