/// Runs `operation` in a task that the caller's cancellation does not reach, so that the
/// database calls of a worker that is shutting down still complete. Every call it wraps is
/// bounded by the queue's `connectionTimeout`.
func uncancelled<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result)
  async throws -> Result
{
  try await Task { try await operation() }.value
}

/// Sleeps for `duration` in a task that the caller's cancellation does not reach: the wait
/// before a stopping worker retries recording a run's end is not cut short.
func sleepUncancelled(for duration: Duration) async {
  // Nothing cancels this task, so the sleep cannot throw.
  await Task { try? await Task.sleep(for: duration) }.value
}
