import AsyncAlgorithms
import DelayedPreemptiveDispatch

/// The ways of debouncing an `AsyncStream` that the stream workloads measure, in table order.
public enum StreamContender: String, CaseIterable, Sendable {
  /// `debounced(for:)` of this library, on `ContinuousClock`.
  case debounced
  /// swift-async-algorithms' `debounce(for:)`, on `ContinuousClock`.
  case asyncAlgorithms = "async-algorithms"
  /// The floor: the stream read by a plain loop that keeps the last element and its deadline
  /// (the clock read, `max`, a store), with no timer at all.
  case lowerBound = "lower-bound"

  public func benchmarkName(_ workload: String) -> String {
    "\(workload):\(rawValue)"
  }

  /// Reads `stream` through the contender, calling `body` with every element it emits; returns
  /// the last one.
  public func consume(
    _ stream: AsyncStream<Int>, interval: Duration, body: (Int) async -> Void = { _ in }
  ) async -> Int? {
    (try? await consumeAny(stream, interval: interval, body: body)) ?? nil
  }

  /// Reads `elements` from a base that never suspends (swift-async-algorithms' `async` view of
  /// a range), so that the figure is the contender's own cost per element.
  public func consume(_ elements: Range<Int>, interval: Duration) async -> Int? {
    (try? await consumeAny(elements.async, interval: interval) { _ in }) ?? nil
  }

  @inline(__always)
  private func consumeAny<Base: AsyncSequence & Sendable>(
    _ base: Base, interval: Duration, body: (Int) async -> Void
  ) async throws -> Int? where Base.Element == Int {
    var last: Int?
    switch self {
    case .debounced:
      for try await element in base.debounced(for: interval) {
        last = element
        await body(element)
      }
    case .asyncAlgorithms:
      for try await element in base.debounce(for: interval) {
        last = element
        await body(element)
      }
    case .lowerBound:
      let clock = ContinuousClock()
      var deadline = clock.now
      for try await element in base {
        deadline = max(deadline, clock.now.advanced(by: interval))
        last = element
      }
      keepObserved(deadline)
      if let last { await body(last) }
    }
    return last
  }
}

/// Keeps `value` observed, so that the optimiser cannot drop the work that made it.
@inline(never)
private func keepObserved<T>(_ value: T) {
  withExtendedLifetime(value) {}
}

/// The contenders of the throttled-stream workloads: this library's `throttled(for:)`,
/// swift-async-algorithms' `throttle(for:)`, and a floor that keeps the last element and the
/// earliest instant of the next emission, with no timer.
public enum ThrottleContender: String, CaseIterable, Sendable {
  /// `throttled(for:)` of this library, on `ContinuousClock`, `latest: true`.
  case throttled
  /// swift-async-algorithms' throttle, `_throttle(for:latest:)` in 1.1.4 (underscored there), on
  /// `ContinuousClock`, `latest: true`.
  case asyncAlgorithms = "async-algorithms"
  /// The floor: a plain loop that emits an element when the interval since the previous
  /// emission has passed, and keeps the latest one otherwise (a clock read, a comparison, a
  /// store), with no timer.
  case lowerBound = "lower-bound"

  public func benchmarkName(_ workload: String) -> String {
    "\(workload):\(rawValue)"
  }

  /// Reads `elements` from a base that never suspends through the contender; returns the number
  /// of elements it emitted and the last one.
  public func consume(_ elements: Range<Int>, interval: Duration) async -> (
    emitted: Int, last: Int?
  ) {
    var emitted = 0
    var last: Int?
    switch self {
    case .throttled:
      for await element in elements.async.throttled(for: interval) {
        emitted += 1
        last = element
      }
    case .asyncAlgorithms:
      for await element in elements.async._throttle(for: interval, latest: true) {
        emitted += 1
        last = element
      }
    case .lowerBound:
      let clock = ContinuousClock()
      var next = clock.now
      var pending: Int?
      for await element in elements.async {
        let now = clock.now
        if now >= next {
          emitted += 1
          last = element
          pending = nil
          next = now.advanced(by: interval)
        } else {
          pending = element
        }
      }
      if let pending {
        emitted += 1
        last = pending
      }
    }
    return (emitted, last)
  }
}
