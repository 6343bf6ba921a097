/// Sends concurrent `delay` calls as one multi-row upsert (group commit). While one batch is
/// being written, the submissions that arrive wait for the next one; a quiet queue writes each
/// submission at once. One batch is in flight at a time and a batch holds each key once, so the
/// submissions of one key reach the database in the order of the calls.
actor SubmissionBatcher<Value: Codable & Sendable> {
  private typealias Waiting = (
    submission: DelayStatement.Submission, written: CheckedContinuation<Bool, any Error>
  )
  private var waiting: [Waiting] = []
  private var writing = false
  /// Bounds one statement's size.
  private let maximumBatch = 500

  /// Returns once `submission` is in the database, with whether its batch woke the workers.
  func submit(
    _ submission: DelayStatement.Submission, using queue: PostgresDelayedPreemptiveQueue<Value>
  ) async throws -> Bool {
    try await withCheckedThrowingContinuation { written in
      waiting.append((submission, written))
      if !writing {
        writing = true
        Task { await writeAll(using: queue) }
      }
    }
  }

  private func writeAll(using queue: PostgresDelayedPreemptiveQueue<Value>) async {
    while !waiting.isEmpty {
      let batch = nextBatch()
      do {
        let notified = try await queue.upsert(batch.map(\.submission))
        for entry in batch { entry.written.resume(returning: notified) }
      } catch {
        for entry in batch { entry.written.resume(throwing: error) }
      }
    }
    writing = false
  }

  /// The oldest waiting submissions with distinct keys; a later submission of a key already in
  /// the batch waits for the next one.
  private func nextBatch() -> [Waiting] {
    var keys = Set<String>()
    var batch: [Waiting] = []
    var rest: [Waiting] = []
    for entry in waiting {
      if batch.count < maximumBatch && keys.insert(entry.submission.key).inserted {
        batch.append(entry)
      } else {
        rest.append(entry)
      }
    }
    waiting = rest
    return batch
  }
}
