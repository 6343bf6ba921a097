import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation

/// `state`: what the queue holds, read-only.
struct StateCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "state",
    abstract: "Shows the queue: pending count, running bursts, kept failures with their values.",
    discussion: """
      Pending counts every key with work that has not finished (waiting or running). Each \
      running burst shows the worker that owns it, its attempt, its fence and how long its \
      lease has left (negative: its worker stopped renewing it; another worker takes it over). \
      Each kept failure (oldest first; a key may have several) shows its id, its attempts, its \
      last error and its value, as the JSON the database stores. A queue with no bursts says \
      so, with the names that have bursts (or kept failures) in the database, and a database \
      where no queue was ever migrated says that. Changes nothing.
      """)

  @OptionGroup var queueOptions: QueueOptions

  func run() async throws {
    let lines = try await queueOptions.withQueue { queue in
      do {
        return try await Self.lines(of: queue)
      } catch PostgresDelayedPreemptiveQueueError.databaseError(_, SQLState.undefinedTable, _) {
        return [
          "queue \(queue.name)",
          "no queue was ever used in this database: it has no dpd_bursts table (no migrate() "
            + "has run there); is --url the service's database?",
        ]
      }
    }
    for line in lines { printLine(line) }
  }

  static func lines(of queue: PostgresDelayedPreemptiveQueue<String>) async throws -> [String] {
    let pending = try await queue.pendingCount()
    let running = try await queue.runningBursts()
    let failures = try await queue.rawFailures()
    var lines = ["queue \(queue.name)", "pending: \(pending)", "running: \(running.count)"]
    for burst in running {
      lines.append(
        "  \(burst.key)  owner \(burst.owner)  attempt \(burst.attempt)  fence \(burst.fence)"
          + "  lease left \(Self.seconds(burst.leaseLeft))")
    }
    lines.append("failures: \(failures.count)")
    for failure in failures {
      let lastError = failure.lastError.split(whereSeparator: \.isNewline).joined(separator: " ")
      lines.append(
        "  \(failure.key)  id \(failure.id)  attempts \(failure.attempts)  last error: \(lastError)"
      )
      lines.append("    value: \(failure.json)")
    }
    if pending == 0 && failures.isEmpty {
      lines.append(try await Self.noBursts(queue))
    }
    return lines
  }

  /// What an empty queue means: idle, or a name no service uses here.
  static func noBursts(_ queue: PostgresDelayedPreemptiveQueue<String>) async throws -> String {
    let shown = 20
    let names = try await queue.namesInUse(limit: shown + 1)
    let others =
      names.isEmpty
      ? "no queue has bursts in this database now"
      : "names with bursts in this database: "
        + names.prefix(shown).map { "\($0.name) (\($0.rows))" }.joined(separator: ", ")
        + (names.count > shown ? ", and more" : "")
    return
      "no bursts under the name \(queue.name): the queue is idle, or no service uses this "
      + "name; \(others)"
  }

  /// `12.3 s`.
  static func seconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return String(format: "%.1f s", Double(seconds) + Double(attoseconds) / 1e18)
  }
}
