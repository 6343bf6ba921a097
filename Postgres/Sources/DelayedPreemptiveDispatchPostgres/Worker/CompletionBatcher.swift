import Foundation

/// Records the ends of successful runs: a ``GroupCommit`` of runs' ends with one writer. While
/// one batch is being written, the runs that end meanwhile wait for the next one; an idle
/// worker writes each end at once, from the run's own task, and a busy one writes many per
/// round trip. No end waits for a deadline: a run waits until its end is written, and the
/// worker's outage loop retries the transient failures.
///
/// Not generic over the queue's value, which the ends never read: so the batcher's code, which
/// every run goes through, is compiled for its one writer, not left generic (a lookup of
/// generic metadata at run time for each of its types, in every run).
struct CompletionBatcher: Sendable {
  /// Made once: a writer holds the queue, whose parts a run would otherwise retain and release
  /// for each end.
  private let writer: CompletionWriter
  private let commit = GroupCommit<CompletionWriter>(maximumWriters: 1, maximumBatch: 1_000)

  init<Value>(queue: PostgresDelayedPreemptiveQueue<Value>) {
    self.writer = CompletionWriter(record: { bursts in try await queue.succeeded(bursts) })
  }

  /// Sets how the writer of ends waits for a larger batch (nil: it writes what waits at once;
  /// see ``Worker/endGathering(backlog:pace:)``).
  func gather(_ gathering: GroupCommit<CompletionWriter>.Gathering?) {
    commit.gather(gathering, writer: writer)
  }

  /// Returns once the end of `burst`'s run is written: true when it was recorded, false when
  /// its claim had been taken over (nothing recorded).
  func succeeded(_ burst: ClaimedBurst) async throws -> Bool {
    try await commit.submit(burst, deadline: nil, writer: writer)
  }
}

/// Writes a batch of runs' ends as one statement.
struct CompletionWriter: GroupCommitWriter {
  typealias Entry = ClaimedBurst
  /// Whether the end was recorded (false: the claim had been taken over).
  typealias Output = Bool

  /// The queue's statement for the ends of a batch of runs: the claims it recorded.
  let record: @Sendable ([ClaimedBurst]) async throws -> [UUID]

  /// Each claim ends once: the ends need no order among themselves.
  static func orderKey(of entry: ClaimedBurst) -> String? { nil }

  func expired() -> any Error {
    preconditionFailure("a run's end has no deadline")
  }

  /// Writes one batch and answers its runs. A batch that the database refuses for a reason
  /// that is neither an outage nor a conflict (a defect) is written again one run at a time, so
  /// that the run it is about fails alone and the others are recorded.
  func write(_ batch: [GroupCommit<Self>.Waiting]) async {
    do {
      let recorded = Set(try await record(batch.map(\.entry)))
      for waiting in batch { waiting.answer(.success(recorded.contains(waiting.entry.claim))) }
    } catch let error as PostgresDelayedPreemptiveQueueError
      where batch.count > 1 && !error.isTransient
    {
      for waiting in batch { await write([waiting]) }
    } catch {
      for waiting in batch { waiting.answer(.failure(error)) }
    }
  }
}
