/// The state of one debounced iteration, changed only under its storage's lock.
///
/// An iteration is one line of the one ``BurstDriver``, without tickets: an element is a
/// submission, and a run the driver decides (at a burst's end, or at its start with `leading`)
/// is the element to emit, taken at once. Every rule, and the one timer with its handle, are the
/// driver's; what is left here is the plumbing of a sequence: one slot for a due element that
/// the consumer has not taken yet, the consumer suspended in `next()`, the base's end and the
/// reading task.
@usableFromInline
struct DebounceState<Element: Sendable>: Sendable {
  /// A checked continuation: the consumer is often resumed from the reading task or the timer
  /// while it is still suspending, and the checked form does that inside the standard library,
  /// where ThreadSanitizer sees the synchronisation (an unsafe one, inlined here, was reported as
  /// a race: swiftlang/swift#57803).
  ///
  /// It carries no value: what the consumer gets waits in ``delivered``, which it takes under
  /// the lock once resumed. A continuation of a generic result, carried in ``Effects``, made
  /// every transition's effects (built and destroyed once per element, mostly without a
  /// handoff) go through the runtime's generic and tuple metadata, since the standard library's
  /// continuation is not frozen; it never leaves the state now but to be resumed.
  @usableFromInline typealias Consumer = CheckedContinuation<Void, Never>

  @usableFromInline
  enum Phase: Sendable {
    /// No `next()` yet: the base is not read.
    case idle
    /// The reading task reads the base.
    case reading
    /// The base finished or threw; the consumer gets the due element, then this end.
    case draining(Result<Void, any Error>)
    /// The consumer got the end, was cancelled, or dropped the iterator.
    case finished
  }

  /// What the storage does after a transition, outside the lock: not generic, so that the
  /// effects that every element's transition reads and writes need no generic metadata. The
  /// reading task keeps one value for all its elements (``DebounceStorage/read()``).
  @usableFromInline typealias Effects = DebounceEffects

  @usableFromInline typealias Lines = SingleLine<Element>

  @usableFromInline var driver: BurstDriver<Lines>
  @usableFromInline var phase = Phase.idle
  /// A due element the consumer has not taken yet; a newer due element replaces it.
  @usableFromInline var due: Element?
  /// What the consumer handed off gets; it takes it under the lock once resumed.
  @usableFromInline var delivered: Result<Element?, any Error>?
  @usableFromInline var reading: Task<Void, Never>?
  /// Whether the reading task was started, and has returned; tests check them to prove that no
  /// task outlives the iteration.
  @usableFromInline var readingStarted = false
  @usableFromInline var readingEnded = false
  @usableFromInline var watchers: [CheckedContinuation<Void, Never>] = []
  /// `throttled(for:latest: false)`: a burst keeps its first element instead of its last, with
  /// the `combine` merge of the keyed types (a merge that keeps what it has).
  @usableFromInline let keepsFirst: Bool
  // The continuations last: the standard library's `CheckedContinuation` is resilient, so the
  // offset of every field after one is read from the type's metadata at run time; the
  // per-element path reads only the fields above.
  /// The consumer waiting in `next()`.
  @usableFromInline var consumer: Consumer?
  /// The consumer handed off, to be resumed outside the lock (``Effects/resumesConsumer``).
  @usableFromInline var resuming: Consumer?

  @inlinable
  init(options: DelayOptions, keepsFirst: Bool = false) {
    self.keepsFirst = keepsFirst
    driver = BurstDriver(
      options: options, maxConcurrentTasks: 1, tracking: .none,
      instance: "AsyncDebouncedSequence")
    driver.installLine(Lines.LineID(), work: nil)
  }

  // MARK: - The consumer

  /// The consumer calls `next()`: hand it what is due, or keep it waiting. Returns whether
  /// `consumer` is to be resumed at once, what it gets in ``delivered``.
  @inlinable mutating func next(_ consumer: Consumer, _ effects: inout Effects) -> Bool {
    precondition(
      self.consumer == nil && resuming == nil && delivered == nil,
      "AsyncDebouncedSequence.Iterator.next() was called again "
        + "before the previous call returned")
    if let element = due.take() {
      delivered = .success(element)
      return true
    }
    switch phase {
    case .idle:
      phase = .reading
      effects.startsReading = true
      readingStarted = true
      wait(consumer, &effects)
      return false
    case .reading:
      wait(consumer, &effects)
      return false
    case .draining(let end):
      finish(&effects)
      delivered = end.map { nil }
      return true
    case .finished:
      delivered = .success(nil)
      return true
    }
  }

  /// The consumer was resumed: what it gets.
  @inlinable mutating func takeDelivered() -> Result<Element?, any Error> {
    guard let result = delivered.take() else {
      preconditionFailure("AsyncDebouncedSequence: a consumer was resumed with nothing delivered")
    }
    return result
  }

  /// The reading task started; returns whether it must stop at once (the iteration ended
  /// before it could be kept).
  @inlinable mutating func readingStarted(_ task: Task<Void, Never>) -> Bool {
    guard case .reading = phase else { return true }
    reading = task
    return false
  }

  /// The consumer was cancelled or dropped the iterator: end now, dropping the pending element.
  @inlinable mutating func end(_ effects: inout Effects) {
    if case .finished = phase { return }
    effects.burst = driver.release()
    due = nil
    effects.cancelledReading = reading.take()
    if let consumer = consumer.take() { handOff(consumer, .success(nil), &effects) }
    finish(&effects)
  }

  // MARK: - The base

  /// An element of the base at `now`, due `interval` nanoseconds later; returns whether to read
  /// on. `owner` is what the driver's tickets would name, had it any to make (``TicketLedger``
  /// makes none for a stream): the storage, passed in, rather than a global that every element
  /// would load through a lazy initialiser.
  @inlinable mutating func receive(
    _ element: Element, at now: TimelineInstant, after interval: Int64, owner: AnyObject,
    _ effects: inout Effects
  ) -> Bool {
    guard case .reading = phase else { return false }
    var work = element
    if keepsFirst, let first = driver.takeValueToCombine(Lines.LineID(), at: now) { work = first }
    _ = driver.delay(
      Lines.LineID(), .nanoseconds(interval), now: now, work: work, owner: owner,
      effects: &effects.burst)
    emitDecided(&effects)
    return true
  }

  /// The base finished (`.success`) or threw: the pending element is due at once, then the end.
  @inlinable mutating func baseEnded(
    _ end: Result<Void, any Error>, at now: TimelineInstant, _ effects: inout Effects
  ) {
    guard case .reading = phase else { return }
    reading = nil
    effects.burst = driver.flush(Lines.LineID(), at: now)
    emitDecided(&effects)
    effects.burst.cancelledTimer = driver.release().cancelledTimer
    if let consumer = consumer.take() {
      finish(&effects)
      handOff(consumer, end.map { nil }, &effects)
    } else {
      phase = .draining(end)
    }
  }

  // MARK: - The timer

  @inlinable mutating func timerFired(
    at now: TimelineInstant, generation: UInt64, _ effects: inout Effects
  ) {
    guard case .reading = phase else { return }
    effects.burst = driver.timerFired(at: now, generation: generation)
    emitDecided(&effects)
  }

  /// Keeps `handle` as the live timer's; returns it to be cancelled when its timer is no longer
  /// live (it fired or was replaced before the storage got here, or the iteration ended).
  @inlinable mutating func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle? {
    driver.install(handle, generation: generation)
  }

  // MARK: - Observation, for the marble runner

  /// Keeps `watcher` until the consumer waits in `next()` or the iteration has finished;
  /// returns false when one of them is already the case.
  @inlinable mutating func watch(_ watcher: CheckedContinuation<Void, Never>) -> Bool {
    if consumer != nil { return false }
    if case .finished = phase { return false }
    watchers.append(watcher)
    return true
  }

  // MARK: - Helpers

  /// Hands `element` to the waiting consumer, or keeps it due in place of an older one.
  @inlinable mutating func emit(_ element: Element, _ effects: inout Effects) {
    if let consumer = consumer.take() {
      handOff(consumer, .success(element), &effects)
    } else {
      due = element
    }
  }

  /// Hands `result` to `consumer`, taken from ``consumer``: the storage resumes it outside the
  /// lock, and it takes `result` once resumed.
  @inlinable mutating func handOff(
    _ consumer: Consumer, _ result: Result<Element?, any Error>, _ effects: inout Effects
  ) {
    delivered = result
    resuming = consumer
    effects.resumesConsumer = true
  }

  @inlinable mutating func wait(_ consumer: Consumer, _ effects: inout Effects) {
    self.consumer = consumer
    effects.watchers = watchers
    watchers = []
  }

  /// Emits the runs the driver decided, oldest first: each is an element due now, and a newer
  /// one replaces an older one the consumer has not taken.
  @inlinable @inline(__always) mutating func emitDecided(_ effects: inout Effects) {
    guard effects.burst.workersToStart > 0 else { return }
    emitRuns(&effects)
  }

  /// ``emitDecided(_:)`` when the driver decided runs: out of line, so that an element that
  /// decides none (nearly every one) checks a count and moves on, without setting up the
  /// consumer's continuation, whose layout is known only at run time.
  @inlinable @inline(never) mutating func emitRuns(_ effects: inout Effects) {
    effects.burst.workersToStart = 0
    var finished: Lines.LineID?
    while let next = driver.nextRun(finishing: finished).run {
      emit(next.run.work, &effects)
      finished = next.id
    }
  }

  @inlinable mutating func finish(_ effects: inout Effects) {
    phase = .finished
    reading = nil
    driver.disarm(&effects.burst)
    effects.watchers += watchers
    watchers = []
  }
}

/// What a ``DebounceStorage`` does after a transition of its ``DebounceState``, outside the
/// lock, in this order.
@usableFromInline
struct DebounceEffects {
  /// Resume the consumer handed off (``DebounceState/resuming``), its result in
  /// ``DebounceState/delivered``. A flag, not the continuation, so that the effects of a
  /// transition hold no type of unknown layout: every element's transition reads and writes
  /// them.
  @usableFromInline var resumesConsumer = false
  /// The timer steps (cancel the replaced timer, arm the new one), performed by the one
  /// interpreter, ``BurstEffects/perform(startWorkers:arm:install:becameIdle:)``.
  @usableFromInline var burst = BurstEffects()
  /// Start the reading task (the first `next()`).
  @usableFromInline var startsReading = false
  @usableFromInline var cancelledReading: Task<Void, Never>?
  /// Resume these waiters of ``DebounceStorage/waitUntilConsumerWaits()``.
  @usableFromInline var watchers: [CheckedContinuation<Void, Never>] = []

  @inlinable init() {}

  /// Whether these effects ask for nothing, as a new value does; see
  /// ``BurstEffects/isEmpty``.
  @inlinable var isEmpty: Bool {
    !resumesConsumer && burst.isEmpty && !startsReading && cancelledReading == nil
      && watchers.isEmpty
  }

  /// The stored properties that ``isEmpty`` checks.
  static let storedPropertyCount = 5
}
