import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Testing

/// `debounced` beyond timelines: S3 (cancellation, no task left, a slow consumer) and S4 (a due
/// element is handed over before `advance` returns), and reading with or without `try`.
@Suite(.timeLimit(.minutes(1))) struct DebouncedLifecycleTests {
  let clock = ManualClock()

  // MARK: - S4

  @Test func advanceReturnsAfterHandingTheDueElementToAWaitingNext() async {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
    var iterator = stream.debounced(for: .seconds(1), clock: clock).makeAsyncIterator()
    let storage = iterator.storage
    let consumer = Task { await iterator.next() }
    await storage.waitUntilConsumerWaits()
    continuation.yield(7)
    while clock.pendingTimerCount == 0 { await Task.yield() }  // the element was read
    await clock.advance(by: .seconds(1))
    // Had the element not been handed over yet, the cancelled `next()` would return nil.
    consumer.cancel()
    #expect(await consumer.value == 7)
  }

  @Test func nothingIsHandedOverBeforeTheDeadline() async {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
    var iterator = stream.debounced(for: .seconds(1), clock: clock).makeAsyncIterator()
    let storage = iterator.storage
    let consumer = Task { await iterator.next() }
    await storage.waitUntilConsumerWaits()
    continuation.yield(7)
    while clock.pendingTimerCount == 0 { await Task.yield() }
    await clock.advance(by: .milliseconds(999))
    consumer.cancel()
    #expect(await consumer.value == nil)
  }

  // MARK: - S3

  @Test func cancellingTheConsumerEndsTheIterationAndTheBaseReading() async throws {
    let source = MarbleSource()
    var iterator = source.debounced(for: .seconds(3), clock: clock).makeAsyncIterator()
    let storage = iterator.storage
    let consumer = Task { try await iterator.next() }
    await storage.waitUntilConsumerWaits()
    await source.waitForDemand()
    source.send(.element("a"))
    await source.waitForDemand()
    consumer.cancel()
    #expect(try await consumer.value == nil)  // the pending "a" is dropped
    await expectEventually("the base's reading was cancelled and returned") {
      storage.readingHasEnded
    }
    await clock.advance(by: .seconds(3))  // its timer is stale now
  }

  @Test func aConsumerCancelledBeforeItsFirstNextReadsNothing() async throws {
    let source = MarbleSource()
    var iterator = source.debounced(for: .seconds(3), clock: clock).makeAsyncIterator()
    let storage = iterator.storage
    let consumer = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await iterator.next()
    }
    #expect(try await consumer.value == nil)
    #expect(storage.readingHasEnded)
  }

  @Test func afterTheEndEveryNextReturnsNil() async throws {
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: Int.self)
    var iterator = stream.debounced(for: .seconds(1), clock: clock).makeAsyncIterator()
    continuation.yield(1)
    continuation.finish(throwing: MarbleFailure())
    #expect(try await iterator.next() == 1)
    await #expect(throws: MarbleFailure.self) { try await iterator.next() }
    #expect(try await iterator.next() == nil)
    #expect(try await iterator.next() == nil)
  }

  @Test func droppingTheIteratorCancelsTheBaseReadingAndFreesTheStorage() async {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
    let terminated = AsyncStream.makeStream(of: Void.self)
    continuation.onTermination = { _ in terminated.continuation.finish() }
    weak var weakStorage: DebounceStorage<AsyncStream<Int>, ManualClock>?
    do {
      var iterator = stream.debounced(for: .seconds(1), clock: clock).makeAsyncIterator()
      weakStorage = iterator.storage
      continuation.yield(1)
      continuation.yield(2)
      let storage = iterator.storage
      let reader = Task { await iterator.next() }
      await storage.waitUntilConsumerWaits()
      while clock.pendingTimerCount == 0 { await Task.yield() }
      await clock.advance(by: .seconds(1))
      #expect(await reader.value == 2)
    }
    for await _ in terminated.stream {}  // the base's iteration was cancelled
    await expectEventually("the reading task let go of the storage") { weakStorage == nil }
  }

  @Test func aSlowConsumerGetsOnlyTheNewestDueElement() async throws {
    let source = MarbleSource()
    var iterator = source.debounced(for: .seconds(3), clock: clock).makeAsyncIterator()
    let storage = iterator.storage
    let driver = Task { [clock] in
      await storage.waitUntilConsumerWaits()
      await source.waitForDemand()
      for element in ["a", "b", "c"] as [Character] {
        source.send(.element(element))
        await source.waitForDemand()
        await clock.advance(by: .seconds(3))  // "a" goes to the waiting consumer; "b", "c" wait
      }
      source.send(.element("d"))
      await source.waitForDemand()
    }
    #expect(try await iterator.next() == "a")
    await driver.value  // "b" and "c" fell due while the consumer was busy; "d" is pending
    #expect(try await iterator.next() == "c")
    source.send(.finished)
    #expect(try await iterator.next() == "d")
    #expect(try await iterator.next() == nil)
  }

  // MARK: - Reading with or without `try`

  @Test func aBaseThatNeverThrowsIsReadWithoutTry() async {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
    for value in 1...3 { continuation.yield(value) }
    continuation.finish()
    var received: [Int] = []
    for await value in stream.debounced(for: .zero, clock: ContinuousClock()) {
      received.append(value)
    }
    #expect(received.last == 3)
  }

  @Test func aThrowingBaseIsReadWithTryAndItsErrorComesAfterThePendingElement() async {
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: Int.self)
    continuation.yield(1)
    continuation.yield(2)
    continuation.finish(throwing: MarbleFailure())
    var received: [Int] = []
    await #expect(throws: MarbleFailure.self) {
      for try await value in stream.debounced(for: .seconds(60)) { received.append(value) }
    }
    #expect(received == [2])
  }
}
