import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

/// The keyed types that keep every value of a burst with `combine`, behind one interface.
enum CombiningKind: String, CaseIterable, Sendable, CustomStringConvertible {
  case keyedQueue
  case keyedActor

  var description: String { rawValue }

  struct Instance: Sendable {
    let delay: @Sendable (Int, Duration, [Int]) async -> DelayTicket
    let cancel: @Sendable (Int) async -> Void
    let wait: @Sendable () async -> Void
  }

  /// Every run appends "key:values" to `ran`; `body` runs first, when given.
  func make(
    clock: ManualClock, options: DelayOptions = DelayOptions(), ran: Recorder<String>,
    body: (@Sendable (Int, [Int]) async -> Void)? = nil
  ) -> Instance {
    let combine: @Sendable (inout [Int], [Int]) -> Void = { $0 += $1 }
    switch self {
    case .keyedQueue:
      let queue = KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>(
        clock: clock, options: options, combine: combine
      ) { key, values in
        if let body {
          let done = DispatchSemaphore(value: 0)
          Task {
            await body(key, values)
            done.signal()
          }
          done.wait()
        }
        ran.append("\(key):\(values)")
      }
      return Instance(
        delay: { queue.delay($0, for: $1, value: $2) }, cancel: { queue.cancel($0) },
        wait: {
          await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
              _ = queue.wait(timeout: .now() + 30)
              continuation.resume()
            }
          }
        })
    case .keyedActor:
      let actor = KeyedDelayedPreemptiveActor<Int, [Int], ManualClock>(
        clock: clock, options: options, combine: combine
      ) { key, values in
        await body?(key, values)
        ran.append("\(key):\(values)")
      }
      return Instance(
        delay: { await actor.delay($0, for: $1, value: $2) }, cancel: { await actor.cancel($0) },
        wait: { await actor.wait() })
    }
  }
}

/// Rules C1 to C4 of `combine`, on both keyed types, on `ManualClock`.
@Suite struct CombineTests {
  let clock = ManualClock()
  let ran = Recorder<String>()

  /// C1: the task receives the first value combined, in order, with every later one of the
  /// burst; every submission resolves `.executed`, none `.preempted`; keys stay apart.
  @Test(arguments: CombiningKind.allCases)
  func burstReceivesEveryValueInOrder(_ kind: CombiningKind) async {
    let keyed = kind.make(clock: clock, ran: ran)
    var tickets: [DelayTicket] = []
    for value in 1...3 {
      tickets.append(await keyed.delay(1, .milliseconds(500), [value]))
      await clock.advance(by: .milliseconds(100))
    }
    tickets.append(await keyed.delay(2, .milliseconds(100), [9]))
    await clock.advance(by: .milliseconds(100))
    #expect(ran.all == ["2:[9]"])
    await clock.advance(by: .milliseconds(400))
    #expect(ran.all == ["2:[9]", "1:[1, 2, 3]"])
    for ticket in tickets { #expect(await ticket.outcome == .executed) }
  }

  /// C2: with `leading`, the leading run receives the first value alone, and the trailing run
  /// the combination of the later ones.
  @Test(arguments: CombiningKind.allCases)
  func leadingRunsFirstValueAloneAndTrailingCombinesTheRest(_ kind: CombiningKind) async {
    let keyed = kind.make(clock: clock, options: DelayOptions(leading: true), ran: ran)
    #expect(await keyed.delay(1, .milliseconds(500), [1]).outcome == .executed)
    let second = await keyed.delay(1, .milliseconds(500), [2])
    let third = await keyed.delay(1, .milliseconds(500), [3])
    await clock.advance(by: .milliseconds(500))
    #expect(ran.all == ["1:[1]", "1:[2, 3]"])
    #expect(await second.outcome == .executed)
    #expect(await third.outcome == .executed)
  }

  /// C2: a submission while the key's task runs starts a new burst with its own value.
  @Test(arguments: CombiningKind.allCases)
  func submissionDuringARunStartsANewBurst(_ kind: CombiningKind) async {
    let started = AsyncGate()
    let release = AsyncGate()
    let keyed = kind.make(clock: clock, ran: ran) { _, values in
      if values == [1, 2] {
        started.open()
        await release.wait()
      }
    }
    // A delay of a second: a zero one would run each submission at once (T5).
    _ = await keyed.delay(1, .seconds(1), [1])
    _ = await keyed.delay(1, .seconds(1), [2])
    let firing = Task { await clock.advance(by: .seconds(1)) }
    await started.wait()
    _ = await keyed.delay(1, .seconds(1), [3])
    _ = await keyed.delay(1, .seconds(1), [4])
    release.open()
    await firing.value
    await clock.advance(by: .seconds(1))
    await keyed.wait()
    #expect(ran.all == ["1:[1, 2]", "1:[3, 4]"])
  }

  /// C2: `cancel` drops the combined value with the burst.
  @Test(arguments: CombiningKind.allCases)
  func cancelDropsTheCombinedValue(_ kind: CombiningKind) async {
    let keyed = kind.make(clock: clock, ran: ran)
    let first = await keyed.delay(1, .seconds(1), [1])
    let second = await keyed.delay(1, .seconds(1), [2])
    await keyed.cancel(1)
    #expect(await first.outcome == .cancelled)
    #expect(await second.outcome == .cancelled)
    _ = await keyed.delay(1, .seconds(1), [3])
    await clock.advance(by: .seconds(1))
    #expect(ran.all == ["1:[3]"])
  }

  /// C4: `maxSubmissions` bounds how many values one burst combines.
  @Test(arguments: CombiningKind.allCases)
  func maxSubmissionsBoundsTheCombinedValues(_ kind: CombiningKind) async {
    let keyed = kind.make(clock: clock, options: DelayOptions(maxSubmissions: 3), ran: ran)
    for value in 1...7 { _ = await keyed.delay(1, .seconds(1), [value]) }
    await clock.advance(by: .seconds(1))
    await keyed.wait()
    #expect(ran.all == ["1:[1, 2, 3]", "1:[4, 5, 6]", "1:[7]"])
  }
}
