import Logging
import PostgresNIO

/// A worker's own connection for its claim loop, beside the client's pool: made with
/// `PostgresConnection.connect` from the queue's configuration (the same endpoint, credentials,
/// TLS mode and options as the pool's), the first time the pool could not lease a connection
/// promptly; made again when it broke; closed when the worker stops.
///
/// postgres-nio's pool retries a failed connection after 100 ms × 1.25ⁿ, up to a minute, and
/// the queue cannot shorten that: after a restart or a longer outage, the pool may wait seconds
/// before it connects again while the server already accepts connections. The claim loop sends
/// on whichever of the pool and this connection comes first (see
/// ``PostgresDelayedPreemptiveQueue/database(_:key:timeout:cancellable:spare:_:)``), so that
/// claiming resumes within `safetyPoll` plus the outage backoff cap of the server's return.
actor SpareConnection {
  private let settings: PostgresConnection.Configuration
  private var current: (id: Int, connecting: Task<PostgresConnection, any Error>)?
  private var made = 0
  private var closed = false

  /// A spare connection made with `configuration`; nil without one, or when its settings cannot
  /// be read (see `PostgresClient.Configuration.connectionConfiguration()`).
  init?(configuration: PostgresClient.Configuration?) {
    guard let configuration, let settings = try? configuration.connectionConfiguration() else {
      return nil
    }
    self.settings = settings
  }

  /// The open connection, made first if there is none or the last one was closed. Throws the
  /// driver's error when the server cannot be reached (the caller wraps it in the queue's error).
  func connection() async throws -> PostgresConnection {
    while true {
      guard !closed else { throw CancellationError() }
      guard let current else {
        made += 1
        let id = made
        let settings = settings
        self.current = (
          id,
          Task {
            // The driver's own lines stay out of the queue's log, as for the pool's connections.
            let logger = Logger(label: "DelayedPreemptiveDispatchPostgres.SpareConnection") { _ in
              SwiftLogNoOpLogHandler()
            }
            return try await PostgresConnection.connect(
              configuration: settings, id: id, logger: logger)
          }
        )
        continue
      }
      let result = await current.connecting.result
      if case .success(let connection) = result, !connection.isClosed, !closed {
        return connection
      }
      if self.current?.id == current.id { self.current = nil }
      if case .failure(let error) = result { throw error }
    }
  }

  /// Closes the connection, and any made later; the worker stops.
  func close() async {
    closed = true
    guard let current else { return }
    self.current = nil
    if let connection = try? await current.connecting.value { try? await connection.close() }
  }
}
