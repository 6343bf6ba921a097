extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Emits an element only once `interval` has passed without a newer one, under the same rules
  /// and ``DelayOptions`` as ``DelayedPreemptiveDispatchQueue`` and ``DelayedPreemptiveActor``.
  ///
  /// Each element of this sequence is a submission: it starts a burst, or replaces the pending
  /// element of the current one and moves its deadline (``DeadlinePolicy``). The burst's last
  /// element is emitted at its deadline; `maxWait` bounds how long a burst may last, and
  /// `leading` emits its first element at once.
  ///
  /// ```swift
  /// for await query in searchField.values.debounced(for: .milliseconds(300), clock: clock) {
  ///   await search(query)
  /// }
  /// ```
  ///
  /// - Pending element: when this sequence finishes, the pending element is emitted at once,
  ///   then the debounced sequence finishes; when it throws, the pending element comes first,
  ///   then the error.
  /// - Iteration: each iterator reads this sequence in a task of its own, from its first call
  ///   of `next()` on, so that a slow consumer never makes elements pile up: while the consumer
  ///   is busy, a due element waits for it in a single slot, and a newer due element replaces
  ///   it. Cancelling the consuming task (or dropping the iterator) ends the iteration at once,
  ///   cancels the reading task and the timer, and drops the pending element.
  /// - Timers: one per iterator, armed once per burst, never one per element; with a
  ///   ``SchedulingClock`` such as `ManualClock`, `advance` returns once a due element has been
  ///   handed to a waiting `next()`.
  ///
  /// - Parameters:
  ///   - interval: The quiet period; zero or negative means "due now".
  ///   - options: Deadline policy, `maxWait`, `maxSubmissions`, `leading`, `minimumSpacing` and
  ///     tolerance for every burst.
  ///   - clock: The clock of every deadline; `ManualClock` for tests.
  @inlinable
  public func debounced<C: Clock>(
    for interval: Duration, options: DelayOptions = DelayOptions(), clock: C
  ) -> AsyncDebouncedSequence<Self, C> where C.Duration == Duration {
    AsyncDebouncedSequence(base: self, interval: interval, options: options, clock: clock)
  }

  /// Emits an element only once `interval` has passed without a newer one, in real time on
  /// `ContinuousClock`; see ``debounced(for:options:clock:)``.
  ///
  /// ```swift
  /// for await query in searchField.values.debounced(for: .milliseconds(300)) {
  ///   await search(query)
  /// }
  /// ```
  @inlinable
  public func debounced(
    for interval: Duration, options: DelayOptions = DelayOptions()
  ) -> AsyncDebouncedSequence<Self, ContinuousClock> {
    debounced(for: interval, options: options, clock: ContinuousClock())
  }
}

/// The elements of a base sequence that a quiet period passed after, made by
/// `debounced(for:options:clock:)`.
///
/// Every iterator has its own bursts, its own reading task and its own timer; see
/// `debounced(for:options:clock:)` and the article "Debouncing a stream" for the rules.
public struct AsyncDebouncedSequence<Base: AsyncSequence & Sendable, C: Clock>: AsyncSequence,
  Sendable
where Base.Element: Sendable, C.Duration == Duration {
  /// The base sequence's element.
  public typealias Element = Base.Element

  @usableFromInline let base: Base
  @usableFromInline let interval: Duration
  @usableFromInline let options: DelayOptions
  @usableFromInline let clock: C

  @inlinable
  init(base: Base, interval: Duration, options: DelayOptions, clock: C) {
    self.base = base
    self.interval = interval
    self.options = options
    self.clock = clock
  }

  /// Makes an iterator with bursts of its own; it starts reading the base at its first `next()`.
  @inlinable
  public func makeAsyncIterator() -> Iterator {
    Iterator(
      storage: DebounceStorage(base: base, interval: interval, options: options, clock: clock))
  }

  /// Reads the debounced elements; see ``AsyncDebouncedSequence``.
  public struct Iterator: AsyncIteratorProtocol {
    @usableFromInline let lifetime: IteratorLifetime<Base, C>

    @inlinable
    init(storage: DebounceStorage<Base, C>) {
      lifetime = IteratorLifetime(storage: storage)
    }

    /// The next element once its burst is due; `nil` once the base has finished and its pending
    /// element was emitted, or once the calling task is cancelled. Rethrows the base's error,
    /// after its pending element.
    @inlinable
    public mutating func next() async rethrows -> Element? {
      try await lifetime.storage.next()
    }

    /// The iterator's storage, for the marble runner of `DelayedPreemptiveDispatchTesting`.
    package var storage: DebounceStorage<Base, C> { lifetime.storage }
  }
}

@available(*, unavailable)
extension AsyncDebouncedSequence.Iterator: Sendable {}
