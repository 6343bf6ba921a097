extension Worker {
  /// Samples `dpd.postgres.pending` and `dpd.postgres.overdue.age` when the worker starts, soon
  /// after its own runs end (at most five times a second, so that a busy worker does not count
  /// the queue's rows for each run), and at least every five seconds.
  func sampleGauges() async {
    let spacing = Duration.milliseconds(200)
    while !Task.isCancelled {
      do {
        let (pending, overdue) = try await queue.gauges()
        queue.metrics.pending.record(pending)
        queue.metrics.overdueAge.record(overdue)
      } catch {
        logger.debug("could not sample the gauges: \(error)")
      }
      do {
        try await Task.sleep(for: spacing)
      } catch {
        return
      }
      await runEnded.wait(timeout: .seconds(5) - spacing)
    }
  }
}
