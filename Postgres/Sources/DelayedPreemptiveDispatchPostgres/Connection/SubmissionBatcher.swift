/// Sends concurrent `delay` calls as multi-row upserts: a ``GroupCommit`` of submissions. A
/// quiet queue writes each submission at once, from the caller's own task; under load, the
/// submissions that arrive while batches are being written wait for the next batch. At most two
/// statements are in flight, and a key is never in two of them at once (nor twice in one), so
/// the submissions of one key reach the database in the order of the calls.
///
/// Each submission has its own deadline, `connectionTimeout` after its call: the batch it joins
/// waits for the database only until its earliest deadline, and a submission still waiting for
/// a batch at its deadline fails as not written. So no `delay` waits longer than
/// `connectionTimeout`, however long the batches before it took.
struct SubmissionBatcher<Value: Codable & Sendable>: Sendable {
  private let commit = GroupCommit<SubmissionWriter<Value>>(maximumWriters: 2, maximumBatch: 500)

  /// Returns once `submission` is in the database, with whether its statement woke the workers.
  func submit(
    _ submission: DelayStatement.Submission, using queue: PostgresDelayedPreemptiveQueue<Value>
  ) async throws -> Bool {
    try await commit.submit(
      submission, deadline: ContinuousClock.now + queue.connectionTimeout,
      writer: SubmissionWriter(queue: queue))
  }
}

/// Writes a batch of submissions as one `dpd_submit` call.
struct SubmissionWriter<Value: Codable & Sendable>: GroupCommitWriter {
  typealias Entry = DelayStatement.Submission
  /// Whether the statement woke the workers.
  typealias Output = Bool

  let queue: PostgresDelayedPreemptiveQueue<Value>

  static func orderKey(of entry: DelayStatement.Submission) -> String? { entry.key }

  func expired() -> any Error {
    queue.notSent(
      "no connection within \(queue.connectionTimeout): earlier batches were still waiting")
  }

  func write(_ batch: [GroupCommit<Self>.Waiting]) async {
    await store(batch)
  }

  /// Writes `batch` and answers each of its callers. When the database refuses the batch for
  /// its data (SQLSTATE classes 22, 23 and 54: a value or key it cannot store), one submission
  /// is to blame: the halves are written apart, so that every other submission is stored (one
  /// caller's bad input never fails another's).
  ///
  /// A batch that lost a deadlock or a serialization conflict (SQLSTATE class 40) was rolled
  /// back, so it is sent again, once.
  private func store(_ batch: [GroupCommit<Self>.Waiting], retry: Bool = true) async {
    let earliest = batch.compactMap(\.deadline).min() ?? .now
    let left = earliest - ContinuousClock.now
    guard left > .zero else {
      let error = queue.notSent("no answer within \(queue.connectionTimeout)")
      for waiting in batch { waiting.answer(.failure(error)) }
      return
    }
    do {
      let notified = try await queue.upsert(batch.map(\.entry), timeout: left)
      for waiting in batch { waiting.answer(.success(notified)) }
    } catch let error as PostgresDelayedPreemptiveQueueError where retry && error.isConflict {
      await store(batch, retry: false)
    } catch let error as PostgresDelayedPreemptiveQueueError
      where batch.count > 1 && error.isCausedByData
    {
      let middle = batch.count / 2
      await store(Array(batch[..<middle]))
      await store(Array(batch[middle...]))
    } catch let error as PostgresDelayedPreemptiveQueueError {
      for waiting in batch { waiting.answer(.failure(error.attributed(to: waiting.entry.key))) }
    } catch {
      for waiting in batch { waiting.answer(.failure(error)) }
    }
  }
}
