/// One iteration of an ``AsyncDebouncedSequence`` or an ``AsyncThrottledSequence``: the shell that reads the base in a task of
/// its own, arms the machine's timer on the clock, and hands due elements to the consumer.
///
/// Each event takes the lock once for its transition (``DebounceState``) and performs the
/// effects outside it, as the queue and the actor do. The per-element path (a clock reading,
/// one transition, usually no effect) allocates nothing; a timer is armed once per burst, and
/// again only when the deadline moved.
///
/// The per-element path is `@inlinable`, so that a client compiles it for its own base, element
/// and clock: unspecialised, generic metadata lookups cost more than the rest of it. Arming a
/// timer, once per burst, is not inlined.
@usableFromInline
package final class DebounceStorage<Base: AsyncSequence & Sendable, C: Clock>: Sendable
where Base.Element: Sendable, C.Duration == Duration {
  @usableFromInline typealias Element = Base.Element
  @usableFromInline typealias State = DebounceState<Element>

  @usableFromInline let base: Base
  private let timer: ClockTimer<C>
  /// `timer`'s time line, read inline on the per-element path.
  @usableFromInline let timeline: ClockTimeline<C>
  private let tolerance: Duration?
  @usableFromInline let intervalNanoseconds: Int64
  @usableFromInline let state: LockBox<State>

  @usableFromInline
  init(
    base: Base, interval: Duration, options: DelayOptions, clock: C, keepsFirst: Bool = false
  ) {
    self.base = base
    timer = ClockTimer(clock: clock)
    timeline = timer.timeline
    tolerance = options.tolerance
    intervalNanoseconds = interval.saturatingNanoseconds
    state = LockBox(State(options: options, keepsFirst: keepsFirst))
  }

  // MARK: - The consumer

  /// The next due element, for an iterator (and the marble runner of
  /// `DelayedPreemptiveDispatchTesting`, which holds the iterator meanwhile).
  @inlinable
  package func next() async rethrows -> Base.Element? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (consumer: State.Consumer) in
        var effects = State.Effects()
        let resumesNow = state.withLock { $0.next(consumer, &effects) }
        if resumesNow { consumer.resume() }
        perform(effects)
      }
    } onCancel: {
      end()
    }
    return try state.withLock { $0.takeDelivered() }.rethrowingGet()
  }

  /// Ends the iteration: the consumer was cancelled or dropped the iterator.
  @inlinable
  func end() {
    var effects = State.Effects()
    state.withLock { $0.end(&effects) }
    perform(effects)
  }

  /// Returns once the consumer waits in `next()` with nothing due, or the iteration has
  /// finished. The marble runner of `DelayedPreemptiveDispatchTesting` calls it, so that it
  /// moves its clock only once the consumer has taken what was due.
  package func waitUntilConsumerWaits() async {
    await withCheckedContinuation { (watcher: CheckedContinuation<Void, Never>) in
      if !state.withLock({ $0.watch(watcher) }) { watcher.resume() }
    }
  }

  /// Whether the task that reads the base has returned, or never started; tests check it to
  /// prove that no task outlives the iteration.
  package var readingHasEnded: Bool {
    state.withLock { !$0.readingStarted || $0.readingEnded }
  }

  // MARK: - The base

  @inlinable
  func startReading() {
    let task = Task { await self.read() }
    if state.withLock({ $0.readingStarted(task) }) { task.cancel() }
  }

  @inlinable
  func read() async {
    defer { state.withLock { $0.readingEnded = true } }
    var iterator = base.makeAsyncIterator()
    // One effects value for every element, emptied again only after an element that left
    // effects: most elements leave none, and building and destroying a value per element cost
    // more than the element's transition.
    var effects = State.Effects()
    do {
      while let element = try await iterator.next() {
        let now = timeline.now()
        let readsOn = state.withLock {
          $0.receive(element, at: now, after: intervalNanoseconds, owner: self, &effects)
        }
        if !effects.isEmpty {
          perform(effects)
          effects = State.Effects()
        }
        if !readsOn { return }
      }
      baseEnded(.success(()))
    } catch {
      baseEnded(.failure(error))
    }
  }

  @inlinable
  func baseEnded(_ end: Result<Void, any Error>) {
    let now = timeline.saturatingNow()
    var effects = State.Effects()
    state.withLock { $0.baseEnded(end, at: now, &effects) }
    perform(effects)
  }

  // MARK: - The timer

  @usableFromInline
  func timerFired(generation: UInt64) {
    let now = timer.now()
    var effects = State.Effects()
    state.withLock { $0.timerFired(at: now, generation: generation, &effects) }
    perform(effects)
  }

  /// Arms the timer for `request`, delivering in a task that holds the storage weakly.
  @usableFromInline
  func arm(_ request: TimerRequest) -> TimerHandle {
    let generation = request.generation
    return timer.arm(
      at: request.deadline, tolerance: tolerance,
      delivery: .task { [weak self] in self?.timerFired(generation: generation) })
  }

  // MARK: - Effects

  @inlinable @inline(__always)
  func perform(_ effects: State.Effects) {
    if effects.resumesConsumer, let consumer = state.withLock({ $0.resuming.take() }) {
      consumer.resume()
    }
    effects.burst.perform(
      startWorkers: { _ in }, arm: { arm($0) },
      install: { handle, generation in
        state.withLock { $0.install(handle, generation: generation) }
      }, becameIdle: {})
    if effects.startsReading { startReading() }
    effects.cancelledReading?.cancel()
    for watcher in effects.watchers { watcher.resume() }
  }
}
