import Logging
import PostgresNIO

/// Finds out why the pool cannot connect, by making one connection of its own.
///
/// postgres-nio's pool retries a failed connection attempt with backoff and keeps the request
/// waiting, so a request never learns that the password is wrong or the database missing: it just
/// waits. When a request has waited a while for a connection, the queue asks the probe, which
/// connects once with the same configuration, closes the connection at once, and reports what the
/// server or the network said (a refused connection fails the call with its reason, at once,
/// not after `connectionTimeout`).
///
/// <!-- snippet: skip (an internal type: DocC does not render its doc comment) -->
/// ```swift
/// let probe = ConnectionProbe(configuration: configuration)
/// if let failure = await probe.failure(within: .seconds(2)) {
///   throw PostgresDelayedPreemptiveQueueError.databaseUnreachable(
///     host: host, port: port, reason: failure.reason)
/// }
/// ```
///
/// At most one attempt is in flight: concurrent callers share it, and its result is reused for
/// `reuse` (1 s) after it ends. Each caller waits at most its own `limit`, on a timer of its own,
/// and never awaits the attempt itself, so a driver that ignores cancellation cannot hold it. When
/// the last caller stops waiting, the attempt is cancelled and forgotten.
actor ConnectionProbe {
  private struct Waiter {
    var continuation: CheckedContinuation<ConnectionFailure?, Never>
    var timer: Task<Void, Never>
  }

  private struct Attempt {
    var id: Int
    var connecting: Task<Void, Never>
    var waiters: [Int: Waiter] = [:]
  }

  let configuration: PostgresClient.Configuration
  private let reuse: Duration
  private let clock = ContinuousClock()
  private var attempt: Attempt?
  private var latest: (failure: ConnectionFailure?, at: ContinuousClock.Instant)?
  private var lastID = 0
  /// How many connections the probe has tried to make.
  private(set) var attemptCount = 0

  /// A probe that connects with `configuration`, and reuses a result for `reuse` after it.
  init(configuration: PostgresClient.Configuration, reuse: Duration = .seconds(1)) {
    self.configuration = configuration
    self.reuse = reuse
  }

  /// Makes one direct connection with the configuration (at most one attempt in flight at a
  /// time; concurrent callers share it; a result is reused for ~1 s) and closes it.
  ///
  /// Returns the failure when the server or the network gives a reason (authentication failed,
  /// unknown database, connection refused, unknown host, TLS refused…); nil when the connection
  /// succeeds, when nothing answers within `limit`, or when the calling task is cancelled.
  func failure(within limit: Duration) async -> ConnectionFailure? {
    let waiter = makeID()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        wait(waiter, continuation, limit: limit)
      }
    } onCancel: {
      Task { await self.stopWaiting(waiter) }
    }
  }

  private func wait(
    _ waiter: Int, _ continuation: CheckedContinuation<ConnectionFailure?, Never>,
    limit: Duration
  ) {
    if let latest, latest.at.duration(to: clock.now) < reuse {
      return continuation.resume(returning: latest.failure)
    }
    guard !Task.isCancelled, limit > .zero else { return continuation.resume(returning: nil) }
    if attempt == nil { attempt = startAttempt() }
    let timer = Task {
      do { try await Task.sleep(for: limit) } catch { return }
      stopWaiting(waiter)
    }
    attempt?.waiters[waiter] = Waiter(continuation: continuation, timer: timer)
  }

  private func startAttempt() -> Attempt {
    attemptCount += 1
    let id = makeID()
    let configuration = configuration
    let connecting = Task.detached {
      let failure = await Self.connectOnce(configuration)
      await self.finish(id, failure)
    }
    return Attempt(id: id, connecting: connecting)
  }

  /// Hands the result of attempt `id` to its waiters, unless the attempt was abandoned.
  private func finish(_ id: Int, _ failure: ConnectionFailure?) {
    guard let finished = attempt, finished.id == id else { return }
    attempt = nil
    latest = (failure, clock.now)
    for waiter in finished.waiters.values {
      waiter.timer.cancel()
      waiter.continuation.resume(returning: failure)
    }
  }

  /// Resumes `waiter` with nil if it still waits; abandons the attempt when nobody waits for it.
  private func stopWaiting(_ waiter: Int) {
    guard let stopped = attempt?.waiters.removeValue(forKey: waiter) else { return }
    stopped.timer.cancel()
    stopped.continuation.resume(returning: nil)
    if let abandoned = attempt, abandoned.waiters.isEmpty {
      abandoned.connecting.cancel()
      attempt = nil
    }
  }

  private func makeID() -> Int {
    lastID += 1
    return lastID
  }

  /// Connects once and closes the connection; returns what a failure says.
  private static func connectOnce(
    _ configuration: PostgresClient.Configuration
  ) async -> ConnectionFailure? {
    let logger = Logger(label: "DelayedPreemptiveDispatchPostgres.ConnectionProbe") { _ in
      SwiftLogNoOpLogHandler()
    }
    do {
      guard let settings = try configuration.connectionConfiguration() else { return nil }
      let connection = try await PostgresConnection.connect(
        configuration: settings, id: 0, logger: logger)
      try? await connection.close()
      return nil
    } catch {
      return ConnectionFailure(
        connecting: error, password: configuration.password, configuration: configuration)
    }
  }
}
