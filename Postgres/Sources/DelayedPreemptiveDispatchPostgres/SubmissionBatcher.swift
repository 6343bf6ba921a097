/// Sends concurrent `delay` calls as multi-row upserts (group commit). A quiet queue writes each
/// submission at once; under load, the submissions that arrive while batches are being written
/// wait for the next batch. At most `maximumWriters` batches are in flight, and a key is never
/// in two of them at once (nor twice in one), so the submissions of one key reach the database
/// in the order of the calls.
///
/// Each submission has its own deadline, `connectionTimeout` after its call: the batch it joins
/// waits for the database only until its earliest deadline, and a submission still waiting for
/// a batch at its deadline fails as not written. So no `delay` waits longer than
/// `connectionTimeout`, however long the batches before it took.
actor SubmissionBatcher<Value: Codable & Sendable> {
  private typealias Waiting = (
    submission: DelayStatement.Submission, written: CheckedContinuation<Bool, any Error>,
    deadline: ContinuousClock.Instant
  )
  private var waiting: [Waiting] = []
  /// Keys of the batches in flight.
  private var writingKeys = Set<String>()
  private var writers = 0
  private let maximumWriters = 2
  /// Bounds one statement's size.
  private let maximumBatch = 500

  /// Returns once `submission` is in the database, with whether its batch woke the workers.
  func submit(
    _ submission: DelayStatement.Submission, using queue: PostgresDelayedPreemptiveQueue<Value>
  ) async throws -> Bool {
    let deadline = ContinuousClock.now + queue.connectionTimeout
    return try await withCheckedThrowingContinuation { written in
      waiting.append((submission, written, deadline))
      startWriters(using: queue)
    }
  }

  private func startWriters(using queue: PostgresDelayedPreemptiveQueue<Value>) {
    while writers < maximumWriters {
      let batch = nextBatch(using: queue)
      guard !batch.isEmpty else { return }
      writers += 1
      Task { await write(batch, using: queue) }
    }
  }

  private func write(_ batch: [Waiting], using queue: PostgresDelayedPreemptiveQueue<Value>) async {
    await store(batch, using: queue)
    for entry in batch { writingKeys.remove(entry.submission.key) }
    writers -= 1
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
    let earliest = batch.map(\.deadline).min() ?? .now
    let left = earliest - ContinuousClock.now
    guard left > .zero else {
      let error = queue.notSent("no answer within \(queue.connectionTimeout)")
      for entry in batch { entry.written.resume(throwing: error) }
      return
    }
    do {
      let notified = try await queue.upsert(batch.map(\.submission), timeout: left)
      for entry in batch { entry.written.resume(returning: notified) }
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
        entry.written.resume(throwing: error.attributed(to: entry.submission.key))
      }
    } catch {
      for entry in batch { entry.written.resume(throwing: error) }
    }
  }

  /// The oldest waiting submissions whose keys are in no batch in flight, each key once; the
  /// others wait, in order, for a later batch.
  /// Submissions whose deadline passed while they waited fail here, as not written.
  private func nextBatch(using queue: PostgresDelayedPreemptiveQueue<Value>) -> [Waiting] {
    var batch: [Waiting] = []
    var rest: [Waiting] = []
    var held = Set<String>()  // keys that must wait: an earlier submission of theirs waits too
    let now = ContinuousClock.now
    for entry in waiting {
      let key = entry.submission.key
      if entry.deadline <= now {
        entry.written.resume(
          throwing: queue.notSent(
            "no connection within \(queue.connectionTimeout): earlier batches were still waiting"))
        continue
      }
      if batch.count < maximumBatch && !held.contains(key) && !writingKeys.contains(key) {
        writingKeys.insert(key)
        batch.append(entry)
      } else {
        rest.append(entry)
      }
      held.insert(key)
    }
    waiting = rest
    return batch
  }
}
