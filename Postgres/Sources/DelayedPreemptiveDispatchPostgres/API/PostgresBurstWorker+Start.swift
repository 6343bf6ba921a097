import PostgresNIO

extension PostgresDelayedPreemptiveQueue {
  /// What ``PostgresBurstWorker`` does before it claims: it waits until the client runs, then
  /// migrates the schema, retrying while the database cannot be reached; when its role may not
  /// migrate (SQLSTATE `42501`), it waits until another role has migrated the schema to this
  /// package's version. Returns once the schema is ready.
  ///
  /// Throws `newerSchema`, a refusal that retrying cannot heal (any but an outage, a conflict or
  /// a missing permission), and `CancellationError` when the calling task is cancelled meanwhile.
  func prepareForWork() async throws {
    try await waitForRunningClient()
    var outage = Outage(
      what: "migrating the schema", cap: outageBackoff, logger: logger)
    var waiting: SchemaWait?
    while true {
      try Task.checkCancellation()
      do {
        try await migrate()
        outage.ended()
        return
      } catch let error as PostgresDelayedPreemptiveQueueError {
        switch error {
        case _ where error.isTransient:
          try await Task.sleep(for: outage.failed(error, defects: metrics))
        case .databaseError(_, SQLState.insufficientPrivilege, _):
          outage.ended()
          if try await migratedByAnotherRole(refusal: error, waiting: &waiting) { return }
          try await Task.sleep(for: waiting?.nextPause() ?? outageBackoff)
        default:
          logger.error("worker stops: \(keyless(error))")
          throw error
        }
      }
    }
  }

  /// After `refusal` (this role may not migrate): whether the schema has this package's version,
  /// migrated by a role that may; true also when this role may not read `dpd_schema` either, so
  /// that the worker claims on the schema as it is, as `run` does. Logs the wait once.
  private func migratedByAnotherRole(
    refusal: PostgresDelayedPreemptiveQueueError, waiting: inout SchemaWait?
  ) async throws -> Bool {
    let found: Int?
    do {
      found = try await installedSchemaVersion()
    } catch PostgresDelayedPreemptiveQueueError.databaseError(_, SQLState.insufficientPrivilege, _)
    {
      let message =
        "this role may neither migrate the schema nor read dpd_schema; the worker claims on the "
        + "schema as it is: \(refusal)"
      logger.info("\(message)")
      return true
    }
    if let found, found > Schema.version {
      throw PostgresDelayedPreemptiveQueueError.newerSchema(
        found: found, supported: Schema.version)
    }
    if found == Schema.version {
      if waiting != nil { logger.notice("schema ready: another role migrated it") }
      return true
    }
    if waiting == nil {
      waiting = SchemaWait(cap: outageBackoff)
      let installed = found.map { "version \($0)" } ?? "none"
      let message =
        "this role may not migrate the schema (\(refusal)); the worker waits until a role that "
        + "may runs migrate() (schema found: \(installed), needed: version \(Schema.version))"
      logger.warning("\(message)")
    }
    return false
  }

  /// The schema version that `dpd_schema` holds; nil when no queue was ever migrated here.
  func installedSchemaVersion() async throws -> Int? {
    let logger = logger
    do {
      return try await database("schemaVersion") { connection in
        try await connection.scalar(Schema.installedVersion, as: Int.self, logger: logger)
      }
    } catch PostgresDelayedPreemptiveQueueError.databaseError(_, SQLState.undefinedTable, _) {
      return nil
    }
  }
}

/// How long a worker that may not migrate pauses between two looks at the schema: 100 ms,
/// doubling up to `cap`.
private struct SchemaWait {
  let cap: Duration
  private var pause = Duration.milliseconds(50)

  init(cap: Duration) { self.cap = cap }

  mutating func nextPause() -> Duration {
    pause = min(pause * 2, cap)
    return pause
  }
}
