import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting
import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// `dpd_submit` has two forms of one upsert: the single form, for a call of one submission
/// without a trace context, and the set-based form for batches (``DatabaseFunctions``). These
/// tests drive both with the same random sequence of submissions and state changes, one queue
/// name each, and compare every row after every step: a rule that the two forms applied
/// differently would show as a different value, burst list, count or deadline.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresSubmitFormTests {
  /// The options a sequence runs with, as `dpd_submit` takes them.
  struct Options: Sendable, CustomStringConvertible {
    var restart = false
    var maxWaitMilliseconds: Double?
    var maxSubmissions: Int64?
    var append = false
    var spacingMilliseconds: Double = 0

    var description: String {
      "restart \(restart), maxWait \(maxWaitMilliseconds.map { "\($0)" } ?? "none"), "
        + "maxSubmissions \(maxSubmissions.map { "\($0)" } ?? "none"), append \(append), "
        + "spacing \(spacingMilliseconds)"
    }
  }

  /// No set has both `maxWait` and a spacing: the pads of the batch form (see below) are then
  /// never due before a key's burst, so that they cannot change whether a call notifies.
  static let optionSets: [Options] = [
    Options(),
    Options(restart: true, maxWaitMilliseconds: 150_000),
    Options(maxWaitMilliseconds: 210_000, maxSubmissions: 3, append: true),
    Options(restart: true, maxSubmissions: 2, spacingMilliseconds: 90_000),
    Options(maxSubmissions: 1, append: true, spacingMilliseconds: 270_000),
  ]

  @Test(arguments: optionSets.indices)
  func singleAndBatchFormsApplyTheSameRules(optionSet: Int) async throws {
    let options = Self.optionSets[optionSet]
    let seed = UInt64.random(in: 1...UInt64.max)
    try await TestDatabase.withQueue("forms") { queue, client in
      let single = queue.name + ".single"
      let batch = queue.name + ".batch"
      var random = SeededRandomNumberGenerator(seed: seed)
      let keys = ["a", "b", "c", "d"]
      for step in 0..<160 {
        let key = keys[Int(random.next() % UInt64(keys.count))]
        let choice = random.next() % 10
        let context = "seed \(seed), options \(options), step \(step), key \(key)"
        if choice < 7 {
          // Delays in whole minutes: the two calls of a step are milliseconds apart, so a rule
          // applied differently shows as a difference of a minute or more.
          let delay = Double(random.next() % 5) * 60_000
          let value = options.append ? "[\"v\(step)\"]" : "\"v\(step)\""
          // The pad below is due last, so it cannot change whether the call notifies, unless a
          // burst of the name is due within a second (the margin rule notifies when a waiting
          // burst is upserted and the earliest deadline is that close, but not for a
          // submission that starts a burst behind a claimed head), or `maxSubmissions` is 1
          // (every burst is due at once, the pad too): then the pad's call must notify.
          let soon = try await dueSoon(client, name: single)
          let urgent = options.maxSubmissions == 1 || soon
          let alone = try await submit(
            client, name: single, keys: [key], values: [value], delays: [delay], options)
          // The batch form: the same submission beside a pad, a key of its own due last, which
          // is removed at once so that it never counts among the name's deadlines.
          let beside = try await submit(
            client, name: batch, keys: [key, "pad-\(step)"],
            values: [value, options.append ? "[\"pad\"]" : "\"pad\""],
            delays: [delay, 1e12], options)
          try await client.query(
            "DELETE FROM dpd_bursts WHERE name = \(batch) AND key = \("pad-\(step)")")
          if urgent {
            #expect(beside, "notified for a pad due first: \(context)")
          } else {
            #expect(alone == beside, "notified: \(context)")
          }
        } else {
          // What a worker does to a row, the same in both: claim its head (a run starts),
          // give the claim up with the attempt counted (a run threw), or keep the row only
          // for the spacing (a run ended with nothing behind it).
          let change: String
          switch choice {
          case 7:
            change = """
              claim = gen_random_uuid(), attempts = attempts + 1, last_start = clock_timestamp()
              """
          case 8: change = "claim = NULL"
          default:
            change = """
              idle = true, claim = NULL, attempts = 0, later = '[]'::jsonb,
              last_start = clock_timestamp()
              """
          }
          for name in [single, batch] {
            try await client.query(
              PostgresQuery(
                unsafeSQL: """
                  UPDATE dpd_bursts SET \(change)
                  WHERE name = '\(name)' AND key = '\(key)' AND NOT failed
                  """))
          }
        }
        let rowsAlone = try await rows(client, name: single)
        let rowsBeside = try await rows(client, name: batch)
        #expect(rowsAlone.count == rowsBeside.count, "\(context)")
        for (alone, beside) in zip(rowsAlone, rowsBeside) {
          #expect(alone.matches(beside), "\(context):\n\(alone)\n\(beside)")
        }
        if rowsAlone.count != rowsBeside.count
          || !zip(rowsAlone, rowsBeside).allSatisfy({ $0.matches($1) })
        {
          break
        }
      }
      try await client.query(
        "DELETE FROM dpd_bursts WHERE name = \(single) OR name = \(batch)")
    }
  }

  /// Whether a burst of `name` is due within a second.
  private func dueSoon(_ client: PostgresClient, name: String) async throws -> Bool {
    let rows = try await client.query(
      """
      SELECT EXISTS (SELECT 1 FROM dpd_bursts WHERE name = \(name) AND NOT failed AND NOT idle
        AND due_at < clock_timestamp() + interval '1 second')
      """)
    for try await soon in rows.decode(Bool.self) { return soon }
    return true
  }

  /// Calls `dpd_submit` as the Swift client does, without a trace context.
  private func submit(
    _ client: PostgresClient, name: String, keys: [String], values: [String], delays: [Double],
    _ options: Options
  ) async throws -> Bool {
    let rows = try await client.query(
      """
      SELECT dpd_submit(\(name), \(keys), \(values), \(delays), \(options.restart),
        \(options.maxWaitMilliseconds), \(options.maxSubmissions), \(options.append),
        \(options.spacingMilliseconds))
      """)
    for try await notified in rows.decode(Bool.self) { return notified }
    Issue.record("dpd_submit answered no row")
    return false
  }

  /// A key's row, its instants as seconds since the row's first submission of its newest burst
  /// (`first_submitted`), so that rows written milliseconds apart compare.
  struct Row: CustomStringConvertible {
    var key: String
    var value: String
    var later: String
    var submissions: Int
    var traces: String
    var generation: Int64
    var attempts: Int
    var idle: Bool
    var deadline: Double
    var due: Double

    func matches(_ other: Row) -> Bool {
      key == other.key && value == other.value && later == other.later
        && submissions == other.submissions && traces == other.traces
        && generation == other.generation && attempts == other.attempts && idle == other.idle
        && abs(deadline - other.deadline) < 2 && abs(due - other.due) < 2
    }

    var description: String {
      "\(key): value \(value), later \(later), submissions \(submissions), traces \(traces), "
        + "generation \(generation), attempts \(attempts), idle \(idle), "
        + "deadline \(deadline), due \(due)"
    }
  }

  /// The rows of `name`, by key.
  private func rows(_ client: PostgresClient, name: String) async throws -> [Row] {
    let rows = try await client.query(
      """
      SELECT key, value::text, later::text, submissions, traces::text, generation, attempts,
        idle,
        extract(epoch FROM deadline - first_submitted)::float8,
        extract(epoch FROM due_at - first_submitted)::float8
      FROM dpd_bursts WHERE name = \(name) ORDER BY key
      """)
    var result: [Row] = []
    for try await (
      key, value, later, submissions, traces, generation, attempts, idle, deadline, due
    )
      in rows.decode(
        (String, String, String, Int, String, Int64, Int, Bool, Double, Double).self)
    {
      result.append(
        Row(
          key: key, value: value, later: later, submissions: submissions, traces: traces,
          generation: generation, attempts: attempts, idle: idle, deadline: deadline, due: due))
    }
    return result
  }
}
