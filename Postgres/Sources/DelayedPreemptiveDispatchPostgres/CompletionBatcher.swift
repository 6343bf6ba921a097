import Foundation

/// Records the ends of successful runs in batches: while one batch is being written, the runs
/// that end meanwhile wait for the next one. An idle worker writes each end at once; a busy one
/// writes many per round trip.
actor CompletionBatcher<Value: Codable & Sendable> {
  private let queue: PostgresDelayedPreemptiveQueue<Value>
  private var waiting: [(burst: ClaimedBurst, written: CheckedContinuation<Bool, any Error>)] = []
  private var writing = false

  init(queue: PostgresDelayedPreemptiveQueue<Value>) {
    self.queue = queue
  }

  /// Returns once the end of `burst`'s run is written: true when it was recorded, false when
  /// its claim had been taken over (nothing recorded).
  func succeeded(_ burst: ClaimedBurst) async throws -> Bool {
    try await withCheckedThrowingContinuation { written in
      waiting.append((burst, written))
      if !writing {
        writing = true
        Task { await writeAll() }
      }
    }
  }

  private func writeAll() async {
    while !waiting.isEmpty {
      let batch = waiting
      waiting = []
      do {
        let recorded = Set(try await queue.succeeded(batch.map(\.burst)))
        for entry in batch { entry.written.resume(returning: recorded.contains(entry.burst.claim)) }
      } catch {
        for entry in batch { entry.written.resume(throwing: error) }
      }
    }
    writing = false
  }
}
