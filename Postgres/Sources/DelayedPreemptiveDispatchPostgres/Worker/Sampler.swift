extension Worker {
  /// Samples `dpd.postgres.pending` and `dpd.postgres.overdue.age` when the worker starts, soon
  /// after its own runs end, and at least every five seconds; but after a sample that counted
  /// many bursts, the next one waits ``samplingRestPerBurst`` for each burst counted (at least
  /// 200 ms, at most a minute). Counting is the gauges' cost, and it grows with the backlog: 120
  /// ms for 10^5 rows on a loaded 2-core machine, where five samples a second from each of three
  /// workers took half of the server's CPU during a drain of 10^5 keys, which then ran at half
  /// its speed (and a count every 2 s still took a third of it). With this rest, a backlog of
  /// 10^4 bursts is counted every second, 10^5 every 10 s, 10^6 every minute, and a small queue
  /// five times a second, as before; it depends on the count, not on how long the count took,
  /// so a loaded machine does not make the gauges stale.
  func sampleGauges() async {
    let spacing = Duration.milliseconds(200)
    var counted = 0
    while !Task.isCancelled {
      do {
        let (pending, overdue) = try await queue.gauges()
        metrics.pending.record(pending)
        metrics.overdueAge.record(overdue)
        counted = pending
      } catch {
        logger.debug("could not sample the gauges: \(error)")
      }
      let rest = min(max(spacing, Self.samplingRestPerBurst * counted), .seconds(60))
      do {
        try await Task.sleep(for: rest)
      } catch {
        return
      }
      if rest < .seconds(5) { await runEnded.wait(timeout: .seconds(5) - rest) }
    }
  }

  /// How long the worker waits before the next sample of the gauges for each burst that the
  /// last one counted.
  static var samplingRestPerBurst: Duration { .microseconds(100) }
}
