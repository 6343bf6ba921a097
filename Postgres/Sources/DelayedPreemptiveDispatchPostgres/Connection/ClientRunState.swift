import Atomics
import PostgresNIO

extension PostgresClient {
  /// Whether `run()` has been called on this client; nil when that cannot be read.
  ///
  /// postgres-nio offers no accessor, and logs a warning for every connection leased before
  /// `run()` was called, so this reads the client's stored `runningAtomic`, a
  /// `ManagedAtomic<Bool>` that `run()` sets, by reflection, as in postgres-nio 1.33.
  /// `PostgresWorkerStartTests.clientRunStateIsReadable` fails if a later version changes that.
  var hasStartedRunning: Bool? {
    let flag = Mirror(reflecting: self).children.first { $0.label == "runningAtomic" }?.value
    return (flag as? ManagedAtomic<Bool>)?.load(ordering: .relaxed)
  }
}

extension PostgresDelayedPreemptiveQueue {
  /// Returns once the queue's client runs (`run()` was called, by a `ServiceGroup` or a task of
  /// its own), so that no connection is leased before, which postgres-nio warns of; at once when
  /// that cannot be read. A client that does not run after `warningAfter` is logged, once, at
  /// warning level: every call would wait for it.
  ///
  /// Throws `CancellationError` when the calling task is cancelled meanwhile.
  package func waitForRunningClient(warningAfter: Duration = .seconds(2)) async throws {
    let start = ContinuousClock.now
    var warned = false
    var pause = Duration.milliseconds(1)
    while client.hasStartedRunning == false {
      if !warned && ContinuousClock.now - start >= warningAfter {
        warned = true
        let message =
          "the PostgresClient does not run: put it in the ServiceGroup before the worker (or call "
          + "its run() in a task of its own); nothing reaches the database until it runs"
        logger.warning("\(message)")
      }
      try await Task.sleep(for: pause)
      pause = min(pause * 2, .milliseconds(50))
    }
    if warned { logger.notice("the PostgresClient runs") }
  }
}
