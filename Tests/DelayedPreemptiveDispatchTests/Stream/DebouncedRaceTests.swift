import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// Races of `debounced` (rule S3): random interleavings of base elements, the base's end, the
/// clock and the consumer's cancellation, each checked for a clean end.
@Suite(.timeLimit(.minutes(5))) struct DebouncedRaceTests {
  enum Ending: CaseIterable {
    case finish, fail, cancelConsumer
  }

  struct Outcome: Sendable {
    var received: [Int] = []
    var threw = false
  }

  @Test func everyInterleavingEndsEmitsNoElementTwiceAndLeaksNoTask() async {
    var generator = SystemRandomNumberGenerator()
    for trial in 0..<TestScale.streamRaceTrials {
      await runTrial(trial, using: &generator)
    }
  }

  func runTrial(_ trial: Int, using generator: inout SystemRandomNumberGenerator) async {
    let clock = ManualClock()
    let maxWait = Duration.milliseconds(Int.random(in: 0...4, using: &generator))
    let options = DelayOptions(
      deadlinePolicy: Bool.random(using: &generator) ? .extend : .restart,
      maxWait: Bool.random(using: &generator) ? maxWait : nil,
      leading: Bool.random(using: &generator))
    let interval = Duration.milliseconds(Int.random(in: 0...3, using: &generator))
    let ending = Ending.allCases.randomElement(using: &generator)!
    let steps = Int.random(in: 0...12, using: &generator)
    let endAt = Int.random(in: 0...steps, using: &generator)
    let context = "trial \(trial): \(ending) at \(endAt), \(options), interval \(interval)"

    let (stream, continuation) = AsyncThrowingStream.makeStream(of: Int.self)
    weak var weakStorage: DebounceStorage<AsyncThrowingStream<Int, any Error>, ManualClock>?
    do {
      var iterator = stream.debounced(for: interval, options: options, clock: clock)
        .makeAsyncIterator()
      let storage = iterator.storage
      weakStorage = storage
      let consumer = Task {
        var outcome = Outcome()
        do {
          while let value = try await iterator.next() { outcome.received.append(value) }
        } catch {
          outcome.threw = true
        }
        return outcome
      }
      var sent = 0
      var sentBeforeTheEnd = 0
      for step in 0...steps {
        if step == endAt {
          sentBeforeTheEnd = sent
          switch ending {
          case .finish: continuation.finish()
          case .fail: continuation.finish(throwing: MarbleFailure())
          case .cancelConsumer: consumer.cancel()
          }
        }
        switch Int.random(in: 0..<4, using: &generator) {
        case 0, 1:
          sent += 1
          continuation.yield(sent)
        case 2:
          await clock.advance(by: .milliseconds(Int.random(in: 0...3, using: &generator)))
        default:
          await Task.yield()
        }
      }
      let outcome = await consumer.value
      // Each burst's element is newer than the last one emitted: none twice, none reordered.
      #expect(zip(outcome.received, outcome.received.dropFirst()).allSatisfy(<), "\(context)")
      #expect(outcome.received.allSatisfy { (1...sent).contains($0) }, "\(context)")
      if ending != .cancelConsumer {
        // The consumer saw the base's end, after the last element sent before it.
        #expect(outcome.threw == (ending == .fail), "\(context)")
        #expect(
          outcome.received.last == (sentBeforeTheEnd > 0 ? sentBeforeTheEnd : nil), "\(context)")
      }
      // The task that read the base has returned, with the base still open when cancelled.
      await expectEventually("\(context): the reading task returned") { storage.readingHasEnded }
      continuation.finish()
    }
    await expectEventually("\(context): the iteration is freed") { weakStorage == nil }
  }
}
