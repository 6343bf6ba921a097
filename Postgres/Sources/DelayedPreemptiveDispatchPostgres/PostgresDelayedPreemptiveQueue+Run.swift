import Foundation
import PostgresNIO

extension PostgresDelayedPreemptiveQueue {
  /// Works until the calling task is cancelled: claims due bursts and runs `handler` with each
  /// key and its burst's last value, at most `concurrency` at once. On cancellation it claims
  /// nothing more, lets running handlers finish (they are not cancelled), and returns.
  ///
  /// Handlers run in tasks of their own, concurrently for different keys, never two at once for
  /// one key on any replica (P3). While a handler runs, its lease is renewed every third of
  /// `lease`; if this replica dies, another one runs the burst again after the lease (P4), so
  /// handlers should be idempotent. A handler that throws is retried after `retryBackoff`,
  /// doubling each time; after `maxAttempts` throws the burst is kept in ``failures()`` (P5).
  ///
  /// The worker sleeps until the earliest deadline it knows of. A submission that makes a
  /// deadline earlier, and every ``flush(_:)``, wake it through LISTEN/NOTIFY; `safetyPoll`
  /// bounds the sleep in case a wake-up is missed.
  ///
  /// When claiming fails (the database went away), it stops claiming, waits for the handlers in
  /// flight, and throws the error: restart the worker, as a service supervisor would.
  ///
  /// ```swift
  /// let worker = Task { try await queue.run(concurrency: 8) { key, value in try await work(key, value) } }
  /// // on SIGTERM:
  /// worker.cancel()
  /// try await worker.value   // returns once the handlers in flight have finished
  /// ```
  public func run(
    concurrency: Int = 4, handler: @escaping @Sendable (String, Value) async throws -> Void
  ) async throws {
    requireArgument(
      concurrency >= 1, "PostgresDelayedPreemptiveQueue.run: concurrency must be at least 1")
    let owner = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UUID().uuidString.prefix(8))"
    try await Worker(queue: self, concurrency: concurrency, handler: handler, owner: owner).run()
  }

  func claim(limit: Int, owner: String) async throws -> [ClaimedBurst] {
    let statement = ClaimStatement(
      name: name, limit: limit, owner: owner, leaseMilliseconds: lease.milliseconds)
    return try await database { try await client.rows(statement) }
  }

  func millisecondsUntilDue() async throws -> Double? {
    let statement = NextDueStatement(name: name)
    return try await database { try await client.rows(statement).first ?? nil }
  }

  func renew(_ claims: [UUID]) async throws {
    let statement = RenewStatement(
      name: name, claims: claims, leaseMilliseconds: lease.milliseconds)
    _ = try await database { try await client.rows(statement) }
  }

  func succeeded(_ bursts: [ClaimedBurst]) async throws {
    let statement = SucceededStatement(
      name: name, keys: bursts.map(\.key), claims: bursts.map(\.claim))
    _ = try await database { try await client.rows(statement) }
  }

  func failed(_ burst: ClaimedBurst, error: any Error) async throws {
    let statement = FailedStatement(
      name: name, key: burst.key, claim: burst.claim, maxAttempts: maxAttempts,
      backoffMilliseconds: retryBackoff.milliseconds, error: String(describing: error))
    _ = try await database { try await client.rows(statement) }
  }
}
