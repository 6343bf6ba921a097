/// What a ``GroupCommit`` writes: the statement of a batch of entries, and the order they keep.
///
/// A value type that holds what a statement needs (the queue), passed to each call of
/// ``GroupCommit/submit(_:deadline:writer:)``: the batcher holds no writer, so a queue that holds
/// its batcher makes no reference cycle, and no call allocates a closure for it.
protocol GroupCommitWriter: Sendable {
  associatedtype Entry: Sendable
  associatedtype Output: Sendable

  /// Writes `batch` and answers each of its entries once (``GroupCommit/Waiting/answer``),
  /// with its own outcome: a batch that fails may be split, so that one entry's fault fails
  /// it alone.
  func write(_ batch: [GroupCommit<Self>.Waiting]) async

  /// The key of an entry whose statements must reach the database in the order of the calls
  /// (never two at once, nor twice in one batch), or nil for an entry free of any order.
  static func orderKey(of entry: Entry) -> String?

  /// The error of an entry whose deadline passed while it waited for a batch.
  func expired() -> any Error
}

/// Group commit, the package's one batcher, of `delay` calls and of runs' ends: an entry that
/// arrives while every writer is busy waits for the next batch, so that a busy process writes
/// many per round trip. A quiet one writes each entry at once, from the caller's own task: when
/// a writer is free, none waits and the entry's key is in no statement in flight, the call
/// writes its batch of one itself, with no gathering step and no hop through another task.
///
/// At most `maximumWriters` statements are in flight (a call's own or a batch), of at most
/// `maximumBatch` entries each; an entry with an order key (``GroupCommitWriter/orderKey(of:)``)
/// is never in a statement beside one of its key in flight, nor twice in one, so one key's
/// entries reach the database in the order of the calls. An entry with a deadline that passes
/// while it waits fails with ``GroupCommitWriter/expired()``, unwritten.
///
/// While a ``Gathering`` is set (``gather(_:writer:)``), a free writer does not take a batch of
/// fewer entries than its minimum until the oldest has waited its time: a busy process then
/// writes fewer, larger statements (the worker sets it while a backlog lasts, for the ends of
/// its runs). No entry waits longer than that time for want of others.
///
/// A lock, not an actor, guards the state: the quiet path takes it twice and never suspends
/// for it. A batch's writer is a task owned by the callers it answers; it ends with its
/// statement (see the table of tasks in *Reference*).
final class GroupCommit<Writer: GroupCommitWriter>: Sendable {
  typealias Answer = @Sendable (Result<Writer.Output, any Error>) -> Void

  /// An entry that waits for its statement, and how its caller is answered.
  struct Waiting: Sendable {
    let entry: Writer.Entry
    let deadline: ContinuousClock.Instant?
    let answer: Answer
    /// When it began to wait for a batch; nil for a call's own batch of one, which never
    /// waits (so that the quiet path reads no clock for it).
    var arrived: ContinuousClock.Instant? = nil
  }

  /// How a free writer waits for a larger batch: a batch of fewer than `minimum` entries waits
  /// until its oldest entry has waited `wait`.
  struct Gathering: Sendable, Equatable {
    var minimum: Int
    var wait: Duration
  }

  private struct State: Sendable {
    var waiting: [Waiting] = []
    /// Order keys of the statements in flight.
    var writingKeys = Set<String>()
    var writers = 0
    var gathering: Gathering?
    /// A flush is scheduled: a task that starts the writers once the oldest entry has waited
    /// its gathering time.
    var flushScheduled = false
  }
  private let state = Locked(State())
  private let maximumWriters: Int
  private let maximumBatch: Int

  init(maximumWriters: Int, maximumBatch: Int) {
    precondition(maximumWriters >= 1, "maximumWriters must be at least 1, not \(maximumWriters)")
    precondition(maximumBatch >= 1, "maximumBatch must be at least 1, not \(maximumBatch)")
    self.maximumWriters = maximumWriters
    self.maximumBatch = maximumBatch
  }

  /// The entries that wait for a batch (for tests).
  var waitingCount: Int { state.withLock { $0.waiting.count } }

  /// Returns the entry's outcome once its statement is written.
  func submit(_ entry: Writer.Entry, deadline: ContinuousClock.Instant?, writer: Writer)
    async throws -> Writer.Output
  {
    let key = Writer.orderKey(of: entry)
    let alone = state.withLock { state -> Bool in
      guard state.writers < maximumWriters, state.waiting.isEmpty, state.gathering == nil,
        !(key.map(state.writingKeys.contains) ?? false)
      else { return false }
      state.writers += 1
      if let key { state.writingKeys.insert(key) }
      return true
    }
    if alone {
      // The batch of one that a free writer would take, written from this task.
      let outcome = Locked<Result<Writer.Output, any Error>?>(nil)
      let answer: Answer = { result in outcome.withLock { $0 = result } }
      await writer.write([Waiting(entry: entry, deadline: deadline, answer: answer)])
      finished(key.map { [$0] } ?? [], writer: writer)
      guard let result = outcome.withLock({ $0 }) else {
        preconditionFailure("a GroupCommitWriter answered no entry of its batch")
      }
      return try result.get()
    }
    return try await withCheckedThrowingContinuation { written in
      let answer: Answer = { written.resume(with: $0) }
      state.withLock {
        $0.waiting.append(
          Waiting(entry: entry, deadline: deadline, answer: answer, arrived: .now))
      }
      startWriters(writer)
    }
  }

  /// Sets how a free writer waits for a larger batch (nil: it writes what waits at once), and
  /// starts the batches that may go now under it.
  func gather(_ gathering: Gathering?, writer: Writer) {
    if let gathering {
      precondition(gathering.minimum >= 1, "gathering.minimum must be at least 1")
    }
    state.withLock { $0.gathering = gathering }
    startWriters(writer)
  }

  /// Starts a writer task for each batch that may go now; when a batch waits to gather more,
  /// schedules one flush for when its oldest entry has waited its time.
  private func startWriters(_ writer: Writer) {
    while true {
      var expired: [Waiting] = []
      var flushAt: ContinuousClock.Instant?
      let batch = state.withLock { state -> [Waiting]? in
        let batch = nextBatch(&state, expired: &expired, flushAt: &flushAt)
        if flushAt != nil {
          if state.flushScheduled { flushAt = nil } else { state.flushScheduled = true }
        }
        return batch
      }
      // Answered outside the lock.
      for entry in expired { entry.answer(.failure(writer.expired())) }
      if let flushAt {
        // One task per gathered batch, not per entry; it holds the batcher weakly, and the
        // writer (the queue) only until the flush, at most the gathering's wait.
        Task { [weak self] in
          try? await Task.sleep(until: flushAt, clock: .continuous)
          self?.flush(writer)
        }
      }
      guard let batch else { return }
      Task { await write(batch, writer: writer) }
    }
  }

  private func flush(_ writer: Writer) {
    state.withLock { $0.flushScheduled = false }
    startWriters(writer)
  }

  private func write(_ batch: [Waiting], writer: Writer) async {
    await writer.write(batch)
    finished(batch.compactMap { Writer.orderKey(of: $0.entry) }, writer: writer)
  }

  /// Frees the writer of a statement with `keys`, and starts the batches that may go now.
  private func finished(_ keys: [String], writer: Writer) {
    state.withLock { state in
      for key in keys { state.writingKeys.remove(key) }
      state.writers -= 1
    }
    startWriters(writer)
  }

  /// The oldest waiting entries whose keys are in no statement in flight, each key once, as a
  /// batch that a free writer takes; nil when no writer is free or none may go. The others
  /// wait, in order, for a later batch. Entries whose deadline passed while they waited go to
  /// `expired`, to fail unwritten. While a ``Gathering`` is set, fewer entries than its minimum
  /// wait until the oldest has waited its time, which `flushAt` then says.
  private func nextBatch(
    _ state: inout State, expired: inout [Waiting], flushAt: inout ContinuousClock.Instant?
  ) -> [Waiting]? {
    guard state.writers < maximumWriters, let oldest = state.waiting.first else { return nil }
    if let gathering = state.gathering, state.waiting.count < gathering.minimum {
      let now = ContinuousClock.now
      let due = (oldest.arrived ?? now) + gathering.wait
      if now < due {
        flushAt = due
        return nil
      }
    }
    var batch: [Waiting] = []
    var rest: [Waiting] = []
    var held = Set<String>()  // keys that must wait: an earlier entry of theirs waits too
    let now = ContinuousClock.now
    for waiting in state.waiting {
      if let deadline = waiting.deadline, deadline <= now {
        expired.append(waiting)
        continue
      }
      guard let key = Writer.orderKey(of: waiting.entry) else {
        if batch.count < maximumBatch { batch.append(waiting) } else { rest.append(waiting) }
        continue
      }
      if batch.count < maximumBatch && !held.contains(key) && !state.writingKeys.contains(key) {
        state.writingKeys.insert(key)
        batch.append(waiting)
      } else {
        rest.append(waiting)
      }
      held.insert(key)
    }
    state.waiting = rest
    guard !batch.isEmpty else { return nil }
    state.writers += 1
    return batch
  }
}
