import Foundation

/// Records the ends of successful runs in batches: while one batch is being written, the runs
/// that end meanwhile wait for the next one. An idle worker writes each end at once; a busy one
/// writes many per round trip.
///
/// A lock, not an actor: a run's end joins the batch without a hop (every run makes one).
final class CompletionBatcher<Value: Codable & Sendable>: Sendable {
  private let queue: PostgresDelayedPreemptiveQueue<Value>
  private typealias Waiting = (burst: ClaimedBurst, written: CheckedContinuation<Bool, any Error>)
  private struct State {
    var waiting: [Waiting] = []
    /// A task is writing batches until none waits.
    var writing = false
  }
  private let state = Locked(State())

  init(queue: PostgresDelayedPreemptiveQueue<Value>) {
    self.queue = queue
  }

  /// Returns once the end of `burst`'s run is written: true when it was recorded, false when
  /// its claim had been taken over (nothing recorded).
  func succeeded(_ burst: ClaimedBurst) async throws -> Bool {
    try await withCheckedThrowingContinuation { written in
      let startWriting = state.withLock { state -> Bool in
        state.waiting.append((burst, written))
        guard !state.writing else { return false }
        state.writing = true
        return true
      }
      // The writer ends when no run waits: it is owned by the runs it answers.
      if startWriting { Task { await writeAll() } }
    }
  }

  private func writeAll() async {
    while true {
      let batch = state.withLock { state -> [Waiting] in
        let batch = state.waiting
        state.waiting = []
        if batch.isEmpty { state.writing = false }
        return batch
      }
      if batch.isEmpty { return }
      await write(batch)
    }
  }

  /// Writes one batch and answers its runs. A batch that the database refuses for a reason
  /// that is neither an outage nor a conflict (a defect) is written again one run at a time, so
  /// that the run it is about fails alone and the others are recorded.
  private func write(_ batch: [Waiting]) async {
    do {
      let recorded = Set(try await queue.succeeded(batch.map(\.burst)))
      for entry in batch { entry.written.resume(returning: recorded.contains(entry.burst.claim)) }
    } catch let error as PostgresDelayedPreemptiveQueueError
      where batch.count > 1 && !error.isTransient
    {
      for entry in batch { await write([entry]) }
    } catch {
      for entry in batch { entry.written.resume(throwing: error) }
    }
  }
}
