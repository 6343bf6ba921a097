/// Wakes a sleeping worker early: a NOTIFY rings it. A ring while nobody waits is kept for the
/// next wait, so a wake-up that arrives while the worker is busy is not lost.
actor Doorbell {
  private var rung = false
  private var waiter: CheckedContinuation<Void, Never>?
  /// Makes the timer of an earlier wait a no-op.
  private var generation = 0

  func ring() {
    if let waiter {
      self.waiter = nil
      waiter.resume()
    } else {
      rung = true
    }
  }

  /// Returns when the bell rings (or rang since the last wait), after `timeout`, or when the
  /// calling task is cancelled.
  func wait(timeout: Duration) async {
    if rung || Task.isCancelled {
      rung = false
      return
    }
    generation += 1
    let expected = generation
    let timer = Task {
      try await Task.sleep(for: timeout)
      self.expire(expected)
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { waiter = $0 }
    } onCancel: {
      Task { await self.ring() }
    }
    timer.cancel()
    rung = false
  }

  private func expire(_ expected: Int) {
    if expected == generation { ring() }
  }
}
