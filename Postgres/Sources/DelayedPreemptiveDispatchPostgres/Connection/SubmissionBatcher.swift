/// Sends concurrent `delay` calls as multi-row upserts (group commit). A quiet queue writes each
/// submission at once, from the caller's own task: when a writer is free, no submission waits
/// and the key is in no batch in flight, the call sends its one-row statement itself, with no
/// gathering step and no hop through another task. Under load, the submissions that arrive while
/// batches are being written wait for the next batch. At most `maximumWriters` statements are
/// in flight (a call's own or a batch), and a key is never in two of them at once (nor twice in
/// one), so the submissions of one key reach the database in the order of the calls.
///
/// Each submission has its own deadline, `connectionTimeout` after its call: the batch it joins
/// waits for the database only until its earliest deadline, and a submission still waiting for
/// a batch at its deadline fails as not written. So no `delay` waits longer than
/// `connectionTimeout`, however long the batches before it took.
///
/// A lock, not an actor, guards the state: the quiet path takes it twice and never suspends for
/// it.
final class SubmissionBatcher<Value: Codable & Sendable>: Sendable {
  /// Takes a submission's outcome: resumes its waiting caller, or keeps it for the caller that
  /// writes its own submission.
  private typealias Answer = @Sendable (Result<Bool, any Error>) -> Void
  private typealias Waiting = (
    submission: DelayStatement.Submission, answer: Answer, deadline: ContinuousClock.Instant
  )
  private struct State {
    var waiting: [Waiting] = []
    /// Keys of the statements in flight.
    var writingKeys = Set<String>()
    var writers = 0
  }
  private let state = Locked(State())
  private let maximumWriters = 2
  /// Bounds one statement's size.
  private let maximumBatch = 500

  /// Returns once `submission` is in the database, with whether its statement woke the workers.
  func submit(
    _ submission: DelayStatement.Submission, using queue: PostgresDelayedPreemptiveQueue<Value>
  ) async throws -> Bool {
    let deadline = ContinuousClock.now + queue.connectionTimeout
    let alone = state.withLock { state -> Bool in
      guard state.writers < maximumWriters, state.waiting.isEmpty,
        !state.writingKeys.contains(submission.key)
      else { return false }
      state.writers += 1
      state.writingKeys.insert(submission.key)
      return true
    }
    if alone {
      // The batch of one that a free writer would take, sent from this task.
      let outcome = Locked<Result<Bool, any Error>?>(nil)
      let answer: Answer = { result in outcome.withLock { $0 = result } }
      await store([(submission, answer, deadline)], using: queue)
      finished([submission.key], using: queue)
      guard let result = outcome.withLock({ $0 }) else {
        throw queue.notSent("no answer within \(queue.connectionTimeout)")  // not reached
      }
      return try result.get()
    }
    return try await withCheckedThrowingContinuation { written in
      let answer: Answer = { written.resume(with: $0) }
      state.withLock { $0.waiting.append((submission, answer, deadline)) }
      startWriters(using: queue)
    }
  }

  private func startWriters(using queue: PostgresDelayedPreemptiveQueue<Value>) {
    while true {
      var expired: [Waiting] = []
      let batch = state.withLock { nextBatch(&$0, expired: &expired) }
      // Answered outside the lock.
      for entry in expired {
        entry.answer(
          .failure(
            queue.notSent(
              "no connection within \(queue.connectionTimeout): earlier batches were still waiting")
          ))
      }
      guard let batch else { return }
      Task { await write(batch, using: queue) }
    }
  }

  private func write(_ batch: [Waiting], using queue: PostgresDelayedPreemptiveQueue<Value>) async {
    await store(batch, using: queue)
    finished(batch.map { $0.submission.key }, using: queue)
  }

  /// Frees the writer of a statement with `keys`, and starts the batches that may go now.
  private func finished(_ keys: [String], using queue: PostgresDelayedPreemptiveQueue<Value>) {
    state.withLock { state in
      for key in keys { state.writingKeys.remove(key) }
      state.writers -= 1
    }
    startWriters(using: queue)
  }

  /// Writes `batch` and answers each of its callers. When the database refuses the batch for
  /// its data (SQLSTATE classes 22, 23 and 54: a value or key it cannot store), one submission
  /// is to blame: the halves are written apart, so that every other submission is stored (one
  /// caller's bad input never fails another's).
  ///
  /// A batch that lost a deadlock or a serialization conflict (SQLSTATE class 40) was rolled
  /// back, so it is sent again, once.
  private func store(
    _ batch: [Waiting], using queue: PostgresDelayedPreemptiveQueue<Value>, retry: Bool = true
  ) async {
    let earliest = batch.map { $0.deadline }.min() ?? .now
    let left = earliest - ContinuousClock.now
    guard left > .zero else {
      let error = queue.notSent("no answer within \(queue.connectionTimeout)")
      for entry in batch { entry.answer(.failure(error)) }
      return
    }
    do {
      let notified = try await queue.upsert(batch.map { $0.submission }, timeout: left)
      for entry in batch { entry.answer(.success(notified)) }
    } catch let error as PostgresDelayedPreemptiveQueueError where retry && error.isConflict {
      await store(batch, using: queue, retry: false)
    } catch let error as PostgresDelayedPreemptiveQueueError
      where batch.count > 1 && error.isCausedByData
    {
      let middle = batch.count / 2
      await store(Array(batch[..<middle]), using: queue)
      await store(Array(batch[middle...]), using: queue)
    } catch let error as PostgresDelayedPreemptiveQueueError {
      for entry in batch {
        entry.answer(.failure(error.attributed(to: entry.submission.key)))
      }
    } catch {
      for entry in batch { entry.answer(.failure(error)) }
    }
  }

  /// The oldest waiting submissions whose keys are in no statement in flight, each key once,
  /// as a batch that a free writer takes; nil when no writer is free or none may go. The others
  /// wait, in order, for a later batch.
  /// Submissions whose deadline passed while they waited go to `expired`, to fail as not
  /// written.
  private func nextBatch(_ state: inout State, expired: inout [Waiting]) -> [Waiting]? {
    guard state.writers < maximumWriters, !state.waiting.isEmpty else { return nil }
    var batch: [Waiting] = []
    var rest: [Waiting] = []
    var held = Set<String>()  // keys that must wait: an earlier submission of theirs waits too
    let now = ContinuousClock.now
    for entry in state.waiting {
      let key = entry.submission.key
      if entry.deadline <= now {
        expired.append(entry)
        continue
      }
      if batch.count < maximumBatch && !held.contains(key) && !state.writingKeys.contains(key) {
        state.writingKeys.insert(key)
        batch.append(entry)
      } else {
        rest.append(entry)
      }
      held.insert(key)
    }
    state.waiting = rest
    guard !batch.isEmpty else { return nil }
    state.writers += 1
    return batch
  }
}
