import ArgumentParser
import DelayedPreemptiveDispatchPostgres
import Foundation

/// `state`: what the queue holds, read-only.
struct StateCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "state",
    abstract: "Shows the queue: waiting keys with their due times, running bursts, kept failures.",
    discussion: """
      Waiting bursts are listed earliest due first, each with its due time (in how long, and \
      when, on the database's clock; negative: due and not claimed yet), its submissions, its \
      runs so far and its last fence. Each running burst shows the worker that owns it, its \
      attempt, its fence and how long its lease has left (negative: its worker stopped \
      renewing it; another worker takes it over). Each kept failure (oldest first; a key may \
      have several) shows its id, its attempts, its last error and its value, as the JSON the \
      database stores. Each list shows at most --limit entries and says how many more there \
      are. --key-prefix or --key choose the keys. --json prints one JSON object instead (see \
      OperatingAQueue). Exit status: 0; 1 when the database could not be asked; 2 when the \
      queue does not exist in this database (no migrate() of that name ran there) or --key \
      has no burst and no kept failure. Changes nothing.
      """)

  @OptionGroup var queueOptions: QueueOptions

  @Option(help: "Show only the keys that begin with this text.")
  var keyPrefix: String?

  @Option(help: "Show only this key; exit 2 when it has no burst and no kept failure.")
  var key: String?

  @Option(help: "The most entries of each list.")
  var limit: Int = 50

  @Flag(help: "Print one JSON object instead of text.")
  var json = false

  /// The exit status of a queue or key that does not exist.
  static let notFound = ExitCode(2)

  func validate() throws {
    guard limit >= 1 else { throw ValidationError("--limit must be at least 1, not \(limit)") }
    guard keyPrefix == nil || key == nil else {
      throw ValidationError("give --key or --key-prefix, not both")
    }
  }

  /// The keys chosen by `--key` or `--key-prefix`.
  var keys: PostgresQueueSnapshot.Keys {
    if let key { return .key(key) }
    if let keyPrefix { return .prefix(keyPrefix) }
    return .all
  }

  func run() async throws {
    let (keys, limit, json) = (keys, limit, json)
    let report = try await queueOptions.withQueue { queue in
      do {
        let snapshot = try await queue.snapshot(of: keys, limit: limit)
        let absent = try await Self.absence(of: snapshot, keys: keys, queue: queue)
        let text =
          json
          ? [Self.json(of: snapshot, queue: queue.name, absent: absent)]
          : Self.lines(of: snapshot, queue: queue.name, keys: keys, absent: absent)
        return (text, absent != nil)
      } catch PostgresDelayedPreemptiveQueueError.databaseError(_, SQLState.undefinedTable, _) {
        let absent =
          "no queue was ever used in this database: it has no dpd_bursts table (no migrate() "
          + "has run there); is --url the service's database?"
        let text =
          json
          ? [
            "{\"queue\":\(Self.quoted(queue.name)),\"known\":false,\"absent\":\(Self.quoted(absent))}"
          ]
          : ["queue \(queue.name)", absent]
        return (text, true)
      }
    }
    for line in report.0 { printLine(line) }
    if report.1 { throw Self.notFound }
  }

  /// Why the command exits 2, or nil: the queue is unknown and holds nothing, or `--key` has
  /// nothing. An unknown name is told with the names in use.
  static func absence(
    of snapshot: PostgresQueueSnapshot, keys: PostgresQueueSnapshot.Keys,
    queue: PostgresDelayedPreemptiveQueue<String>
  ) async throws -> String? {
    if !snapshot.isKnown && snapshot.isEmpty {
      return
        "no queue named \(queue.name) in this database (no migrate() of that name ran here); "
        + (try await namesInUse(queue))
    }
    if case .key(let key) = keys, snapshot.isEmpty {
      return "no burst and no kept failure for the key \(key)"
    }
    return nil
  }

  static func lines(
    of snapshot: PostgresQueueSnapshot, queue: String, keys: PostgresQueueSnapshot.Keys,
    absent: String?
  ) -> [String] {
    var lines = ["queue \(queue)"]
    switch keys {
    case .all: break
    case .prefix(let prefix): lines.append("keys beginning with \(prefix)")
    case .key(let key): lines.append("key \(key)")
    }
    lines.append("pending: \(snapshot.waitingCount + snapshot.runningCount)")
    lines.append("waiting: \(snapshot.waitingCount)")
    for burst in snapshot.waiting {
      lines.append(
        "  \(burst.key)  due in \(seconds(burst.dueIn)) (\(timestamp(burst.due)))"
          + "  submissions \(burst.submissions)  attempts \(burst.attempts)"
          + "  fence \(burst.fence.map(String.init) ?? "-")")
    }
    lines += more(snapshot.waitingCount, shown: snapshot.waiting.count)
    lines.append("running: \(snapshot.runningCount)")
    for burst in snapshot.running {
      lines.append(
        "  \(burst.key)  owner \(burst.owner)  attempt \(burst.attempt)  fence \(burst.fence)"
          + "  lease left \(seconds(burst.leaseLeft))")
    }
    lines += more(snapshot.runningCount, shown: snapshot.running.count)
    lines.append("failures: \(snapshot.failureCount)")
    for failure in snapshot.failures {
      let lastError = failure.lastError.split(whereSeparator: \.isNewline).joined(separator: " ")
      lines.append(
        "  \(failure.key)  id \(failure.id)  attempts \(failure.attempts)  last error: \(lastError)"
      )
      lines.append("    value: \(failure.json)")
    }
    lines += more(snapshot.failureCount, shown: snapshot.failures.count)
    if let absent {
      lines.append(absent)
    } else if snapshot.isEmpty, case .all = keys {
      lines.append("no bursts under the name \(queue): the queue is idle")
    }
    return lines
  }

  /// The line that says how many entries `--limit` left out, if any.
  static func more(_ count: Int, shown: Int) -> [String] {
    count > shown ? ["  … \(count - shown) more (--limit)"] : []
  }

  /// The snapshot as one line of JSON. Its fields are documented in OperatingAQueue; each kept
  /// value is the stored JSON itself, not a string.
  static func json(of snapshot: PostgresQueueSnapshot, queue: String, absent: String?) -> String {
    let waiting = snapshot.waiting.map { burst in
      object([
        ("key", quoted(burst.key)), ("due", quoted(timestamp(burst.due))),
        ("dueInSeconds", number(burst.dueIn)), ("submissions", "\(burst.submissions)"),
        ("attempts", "\(burst.attempts)"), ("fence", burst.fence.map(String.init) ?? "null"),
      ])
    }
    let running = snapshot.running.map { burst in
      object([
        ("key", quoted(burst.key)), ("owner", quoted(burst.owner)),
        ("attempt", "\(burst.attempt)"), ("fence", "\(burst.fence)"),
        ("leaseLeftSeconds", number(burst.leaseLeft)),
      ])
    }
    let failures = snapshot.failures.map { failure in
      object([
        ("id", "\(failure.id)"), ("key", quoted(failure.key)),
        ("attempts", "\(failure.attempts)"), ("lastError", quoted(failure.lastError)),
        ("value", failure.json),
      ])
    }
    var fields = [
      ("queue", quoted(queue)), ("known", "\(snapshot.isKnown)"),
      ("pending", "\(snapshot.waitingCount + snapshot.runningCount)"),
      ("waiting", list(waiting, count: snapshot.waitingCount)),
      ("running", list(running, count: snapshot.runningCount)),
      ("failures", list(failures, count: snapshot.failureCount)),
    ]
    if let absent { fields.append(("absent", quoted(absent))) }
    return object(fields)
  }

  /// `{"count": N, "items": [...]}`.
  static func list(_ items: [String], count: Int) -> String {
    object([("count", "\(count)"), ("items", "[" + items.joined(separator: ",") + "]")])
  }

  /// A JSON object of fields whose values are JSON already, in the given order.
  static func object(_ fields: [(String, String)]) -> String {
    "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}"
  }

  /// `text` as a JSON string.
  static func quoted(_ text: String) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    guard let data = try? encoder.encode(text) else { return "\"\"" }
    return String(decoding: data, as: UTF8.self)
  }

  /// Seconds as a JSON number, to the millisecond.
  static func number(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return String(format: "%.3f", Double(seconds) + Double(attoseconds) / 1e18)
  }

  /// What an unknown name means: the names that do have bursts here.
  static func namesInUse(_ queue: PostgresDelayedPreemptiveQueue<String>) async throws -> String {
    let shown = 20
    let names = try await queue.namesInUse(limit: shown + 1)
    return names.isEmpty
      ? "no queue has bursts in this database now"
      : "names with bursts in this database: "
        + names.prefix(shown).map { "\($0.name) (\($0.rows))" }.joined(separator: ", ")
        + (names.count > shown ? ", and more" : "")
  }

  /// `12.3 s`.
  static func seconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return String(format: "%.1f s", Double(seconds) + Double(attoseconds) / 1e18)
  }

  /// `2026-11-28T07:50:01.123Z`.
  static func timestamp(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
  }
}
