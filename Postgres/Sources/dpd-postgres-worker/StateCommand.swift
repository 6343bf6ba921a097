import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation

/// `state`: what the queue holds, read-only.
struct StateCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "state",
    abstract: "Shows the queue: pending count, running bursts, kept failures.",
    discussion: """
      Pending counts every key with work that has not finished (waiting or running). Each \
      running burst shows the worker that owns it, its attempt, its fence and how long its \
      lease has left (negative: its worker stopped renewing it; another worker takes it over). \
      Each kept failure shows its attempts and its last error. Changes nothing.
      """)

  @OptionGroup var queueOptions: QueueOptions

  func run() async throws {
    let lines = try await queueOptions.withQueue { queue in
      let pending = try await queue.pendingCount()
      let running = try await queue.runningBursts()
      let failures = try await queue.failures()
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
          "  \(failure.key)  attempts \(failure.attempts)  last error: \(lastError)")
      }
      return lines
    }
    for line in lines { printLine(line) }
  }

  /// `12.3 s`.
  static func seconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return String(format: "%.1f s", Double(seconds) + Double(attoseconds) / 1e18)
  }
}
