extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Emits at most one element per `interval`: the first element after a quiet interval at
  /// once, then, at the end of each interval that received elements, the latest of them (or the
  /// first, with `latest: false`).
  ///
  /// With `latest: true` this is `debounced(for: .zero, options: .throttle(interval), clock:)`:
  /// the same bursts and timer as ``debounced(for:options:clock:)``, with emissions at least
  /// `interval` apart (``DelayOptions/minimumSpacing``). An interval's element is emitted by
  /// the timer at the interval's end, even when no further element arrives; an element that
  /// arrives after the interval's end, before a late timer has fired, emits it first and opens
  /// the next interval (rule T7 of the article "Throttling").
  ///
  /// ```swift
  /// for await reading in sensor.values.throttled(for: .milliseconds(100), clock: clock) {
  ///   plot(reading)
  /// }
  /// ```
  ///
  /// - Pending element: when this sequence finishes or throws, an element still waiting for its
  ///   interval's end is emitted at once, then the end.
  /// - Iteration, cancellation and timers: as for ``debounced(for:options:clock:)``, one timer
  ///   and one reading task per iterator.
  ///
  /// - Parameters:
  ///   - interval: The least time between two emissions; zero emits every element at once.
  ///   - latest: `true` emits the last element received in the interval, `false` the first one
  ///     received since the previous emission.
  ///   - clock: The clock of every interval; `ManualClock` for tests.
  /// - Precondition: `interval` is not negative; the program stops with a message naming
  ///   `minimumSpacing` otherwise.
  @inlinable
  public func throttled<C: Clock>(
    for interval: Duration, latest: Bool = true, clock: C
  ) -> AsyncThrottledSequence<Self, C> where C.Duration == Duration {
    AsyncThrottledSequence(base: self, interval: interval, latest: latest, clock: clock)
  }

  /// Emits at most one element per `interval`, in real time on `ContinuousClock`; see
  /// ``throttled(for:latest:clock:)``.
  ///
  /// ```swift
  /// for await progress in download.progress.throttled(for: .seconds(1)) {
  ///   show(progress)
  /// }
  /// ```
  @inlinable
  public func throttled(
    for interval: Duration, latest: Bool = true
  ) -> AsyncThrottledSequence<Self, ContinuousClock> {
    throttled(for: interval, latest: latest, clock: ContinuousClock())
  }
}

/// The elements of a base sequence at most one per interval, made by
/// `throttled(for:latest:clock:)`.
///
/// Every iterator has its own bursts, its own reading task and its own timer, on the same
/// machine as ``AsyncDebouncedSequence``; see the article "Throttling" for the rules.
public struct AsyncThrottledSequence<Base: AsyncSequence & Sendable, C: Clock>: AsyncSequence,
  Sendable
where Base.Element: Sendable, C.Duration == Duration {
  /// The base sequence's element.
  public typealias Element = Base.Element

  @usableFromInline let base: Base
  @usableFromInline let options: DelayOptions
  @usableFromInline let latest: Bool
  @usableFromInline let clock: C

  @inlinable
  init(base: Base, interval: Duration, latest: Bool, clock: C) {
    self.base = base
    options = .throttle(interval)
    self.latest = latest
    self.clock = clock
  }

  /// Reads the throttled elements: the iterator of ``AsyncDebouncedSequence``, over storage that
  /// throttles (one iteration type for both, so that its rules are written once).
  public typealias Iterator = AsyncDebouncedSequence<Base, C>.Iterator

  /// Makes an iterator with bursts of its own; it starts reading the base at its first `next()`.
  @inlinable
  public func makeAsyncIterator() -> Iterator {
    Iterator(
      storage: DebounceStorage(
        base: base, interval: .zero, options: options, clock: clock, keepsFirst: !latest))
  }
}
