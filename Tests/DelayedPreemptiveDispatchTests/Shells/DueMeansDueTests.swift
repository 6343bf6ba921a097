import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// Rule T7, "due means due": a submission that arrives when its burst is already due, before
/// the late timer has fired, ends that burst first, as the timer would have at the burst's due
/// instant, and then starts the next burst. On a ``HeldClock``, whose timers fire only when
/// released, what runs (with which value) and the spacing of the next run do not depend on how
/// late the timer is.
@Suite(.timeLimit(.minutes(1))) struct DueMeansDueTests {
  // MARK: - Streams

  /// When `c` of `a@0 b@1 c` reaches `throttled(for: 2 s)`.
  enum Arrival: Sendable, CaseIterable, CustomTestStringConvertible {
    /// At 2 s, after the timer due at 2 s has fired.
    case afterTheTimerAt2
    /// At 2 s, before the timer due at 2 s fires.
    case beforeTheTimerAt2
    /// At 3 s, the timer due at 2 s still not fired.
    case beforeTheTimerAt3

    var testDescription: String {
      switch self {
      case .afterTheTimerAt2: "c at 2 s, after the timer"
      case .beforeTheTimerAt2: "c at 2 s, before the timer"
      case .beforeTheTimerAt3: "c at 3 s, timer not fired"
      }
    }
  }

  /// The table: every row emits `a`, `b` and `c`, and `c` at 4 s, two seconds after
  /// `b`'s interval ended at 2 s, whether or not the timer had fired when `c` arrived. (`b` is
  /// emitted when its end is noticed: by the timer at 2 s, or by `c`'s arrival.)
  @Test(arguments: Arrival.allCases, [true, false])
  func throttledElementArrivingAfterItsIntervalEndsOpensTheNextInterval(
    _ arrival: Arrival, latest: Bool
  ) async {
    let clock = HeldClock()
    let emitted = await StreamRun.run(clock: clock) {
      $0.throttled(for: .seconds(2), latest: latest, clock: clock).makeAsyncIterator()
    } steps: { run in
      await run.send("a")
      clock.advance(to: .seconds(1))
      await run.send("b")
      switch arrival {
      case .afterTheTimerAt2:
        await run.release(at: .seconds(2))
      case .beforeTheTimerAt2:
        clock.advance(to: .seconds(2))
      case .beforeTheTimerAt3:
        clock.advance(to: .seconds(3))
      }
      await run.send("c")
      await run.release(at: .seconds(4))
      await run.release(at: .seconds(8))
    }
    let bAt = arrival == .beforeTheTimerAt3 ? 3_000 : 2_000
    #expect(emitted == ["a@0", "b@\(bAt)", "c@4000"])
  }

  /// `debounced` without a spacing: `b` arriving after `a`'s deadline, before the timer, emits
  /// `a` and then waits its own quiet period.
  @Test func debouncedElementArrivingAfterTheDeadlineEmitsThePendingOneFirst() async {
    let clock = HeldClock()
    let emitted = await StreamRun.run(clock: clock) {
      $0.debounced(for: .seconds(1), clock: clock).makeAsyncIterator()
    } steps: { run in
      await run.send("a")
      clock.advance(to: .milliseconds(1_500))
      await run.send("b")
      await run.release(at: .milliseconds(2_499))
      await run.release(at: .milliseconds(2_500))
    }
    #expect(emitted == ["a@1500", "b@2500"])
  }

  /// `debounced` with a spacing: the burst due at the spacing's end is ended by a submission
  /// that comes later, and the next one counts its spacing from that due instant.
  @Test func debouncedWithSpacingCountsTheSpacingFromTheDueInstant() async {
    let clock = HeldClock()
    let options = DelayOptions(minimumSpacing: .seconds(3))
    let emitted = await StreamRun.run(clock: clock) {
      $0.debounced(for: .seconds(1), options: options, clock: clock).makeAsyncIterator()
    } steps: { run in
      await run.send("a")
      await run.release(at: .seconds(1))  // a@1; the next run no sooner than 4 s
      await run.send("b")  // due at 4 s (2 s by its delay)
      clock.advance(to: .seconds(5))
      await run.send("c")  // b's burst was due at 4 s: b first, then c due at 7 s
      await run.release(at: .milliseconds(6_999))
      await run.release(at: .seconds(7))
    }
    #expect(emitted == ["a@1000", "b@5000", "c@7000"])
  }

  // MARK: - Queues and actors

  /// With `.throttle(2 s)`: `A` at 0 runs, `B` at 1 s waits for the spacing (due at 2 s), `C`
  /// arrives at 2.5 s before the late timer. `B` runs, and `C` waits until 4 s.
  @Test(arguments: ShellKind.allCases)
  func throttledSubmissionAfterItsBurstIsDueRunsThatBurstFirst(_ kind: ShellKind) async {
    let clock = HeldClock()
    let ran = Recorder<String>()
    let shell = kind.make(clock: clock, options: .throttle(.seconds(2)), ran: ran)
    let a = await shell.delay(.zero, "A")
    #expect(await a.outcome == .executed)
    clock.advance(to: .seconds(1))
    let b = await shell.delay(.zero, "B")
    clock.advance(to: .milliseconds(2_500))
    let c = await shell.delay(.zero, "C")
    #expect(await b.outcome == .executed)
    #expect(ran.elements == ["A", "B"])
    #expect(await shell.isPending)
    clock.advance(to: .milliseconds(3_999))
    await clock.release()
    #expect(ran.elements == ["A", "B"])
    clock.advance(to: .seconds(4))
    await clock.release()
    #expect(await c.outcome == .executed)
    #expect(ran.elements == ["A", "B", "C"])
  }

  /// Without a spacing: `X` with a 1 s delay, the timer late, `Y` at 1.5 s. `X` runs (its burst
  /// was due at 1 s) and `Y` waits its own second.
  @Test(arguments: ShellKind.allCases)
  func submissionAfterTheDeadlineRunsThePendingTaskFirst(_ kind: ShellKind) async {
    let clock = HeldClock()
    let ran = Recorder<String>()
    let shell = kind.make(clock: clock, ran: ran)
    let x = await shell.delay(.seconds(1), "X")
    clock.advance(to: .milliseconds(1_500))
    let y = await shell.delay(.seconds(1), "Y")
    #expect(await x.outcome == .executed)
    #expect(ran.elements == ["X"])
    clock.advance(to: .milliseconds(2_499))
    await clock.release()
    #expect(ran.elements == ["X"])
    clock.advance(to: .milliseconds(2_500))
    await clock.release()
    #expect(await y.outcome == .executed)
    #expect(ran.elements == ["X", "Y"])
  }

  /// With `combine`, the value of the burst that was due is not merged into the next one: each
  /// burst runs with its own value.
  @Test func combiningKeyedActorKeepsTheDueBurstsValueApart() async {
    let clock = HeldClock()
    let ran = Recorder<String>()
    let actor = KeyedDelayedPreemptiveActor<Int, String, HeldClock>(
      clock: clock, combine: { $0 += $1 }, task: { _, value in ran.append(value) })
    let x = await actor.delay(0, for: .seconds(1), value: "x")
    clock.advance(to: .milliseconds(1_500))
    await actor.delay(0, for: .seconds(1), value: "y")
    await actor.delay(0, for: .seconds(1), value: "z")
    #expect(await x.outcome == .executed)
    clock.advance(to: .milliseconds(2_500))
    await clock.release()
    await actor.wait()
    #expect(ran.elements == ["x", "yz"])
  }

  @Test func combiningKeyedQueueKeepsTheDueBurstsValueApart() async {
    let clock = HeldClock()
    let ran = Recorder<String>()
    let queue = KeyedDelayedPreemptiveDispatchQueue<Int, String>(
      clock: clock, combine: { $0 += $1 }, task: { _, value in ran.append(value) })
    let x = queue.delay(0, for: .seconds(1), value: "x")
    clock.advance(to: .milliseconds(1_500))
    queue.delay(0, for: .seconds(1), value: "y")
    let z = queue.delay(0, for: .seconds(1), value: "z")
    #expect(await x.outcome == .executed)
    clock.advance(to: .milliseconds(2_500))
    await clock.release()
    #expect(await z.outcome == .executed)
    #expect(ran.elements == ["x", "yz"])
  }
}

/// Drives a debounced or throttled iterator over a ``MarbleSource`` on a ``HeldClock``, step by
/// step, each step taken once the previous one has settled, and records what the consumer gets
/// as `element@milliseconds`.
struct StreamRun {
  let clock: HeldClock
  let source: MarbleSource
  let storage: DebounceStorage<MarbleSource, HeldClock>

  /// Sends `element`, and returns once the iterator has taken it and the consumer waits again.
  func send(_ element: Character) async {
    source.send(.element(element))
    await source.waitForDemand()
    await storage.waitUntilConsumerWaits()
  }

  /// Releases the clock's due timers, and returns once the consumer waits again.
  func release() async {
    await clock.release()
    await storage.waitUntilConsumerWaits()
  }

  /// Moves the clock to `offset`, then releases the timers due by then.
  func release(at offset: Duration) async {
    clock.advance(to: offset)
    await release()
  }

  static func run(
    clock: HeldClock,
    iterating iterate: (MarbleSource) -> AsyncDebouncedSequence<MarbleSource, HeldClock>.Iterator,
    steps: (StreamRun) async -> Void
  ) async -> [String] {
    let source = MarbleSource()
    let iterator = iterate(source)
    let storage = iterator.storage
    let emitted = Recorder<String>()
    let consumer = Task {
      while let element = try? await storage.next() {
        let offset = clock.now.offset.components
        emitted.append(
          "\(element)@\(offset.seconds * 1_000 + offset.attoseconds / 1_000_000_000_000_000)")
      }
    }
    await storage.waitUntilConsumerWaits()
    await source.waitForDemand()
    await steps(StreamRun(clock: clock, source: source, storage: storage))
    consumer.cancel()
    await consumer.value
    withExtendedLifetime(iterator) {}
    return emitted.elements
  }
}
