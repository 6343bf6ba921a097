import Foundation

/// The test worker's command-line options (see main.swift).
struct WorkerSettings: Sendable {
  var name = "demo"
  var concurrency = 4
  var leaseMilliseconds = 30_000
  var handlerMilliseconds = 0
  /// With a value, each handler sleeps a random time from 0 to this many milliseconds instead.
  var handlerMaxMilliseconds: Int?
  var maxAttempts = 5
  var retryBackoffMilliseconds = 1000
  var record = false
  /// How long a record query may take before the handler throws (`bounded`): short for the
  /// outage tests, where a restart leaves queries unanswered.
  var recordTimeoutMilliseconds = 2000
  /// How long a failing record query is tried again before the handler throws; 0: not again.
  var recordRetryMilliseconds = 0
  var recordBatched = false
  var fenced = false
  var transactional = false
  /// With `transactional`: the handler also writes the key's row of dpd_test_tx_documents, so
  /// that a second run of the key waits for the first one's transaction to end.
  var transactionalDocument = false
  var observeCancellationMilliseconds = 0
  var crash = false
  /// Crash (as `--crash`) only in the runs whose recorded value contains this text.
  var crashWhen: String?
  var quiet = false
  /// Log lines at this level and above go to stderr; nil: no logging.
  var logLevel: String?
  /// Asks for `options.leading`, which the queue refuses with a precondition message: the tests
  /// check that message through this flag.
  var leading = false
  /// A queue of `[String]` with `merge: .append` instead of `String` with `.replace`.
  var append = false
  var maxSubmissions: Int?
  /// `options.minimumSpacing`, in milliseconds; nil for none.
  var minimumSpacingMilliseconds: Int?

  init(arguments: [String]) {
    var remaining = arguments[...]
    while let flag = remaining.popFirst() {
      switch flag {
      case "--record": record = true
      case "--record-batched": recordBatched = true
      case "--fenced": fenced = true
      case "--transactional": transactional = true
      case "--tx-document": transactionalDocument = true
      case "--crash": crash = true
      case "--crash-when": crashWhen = remaining.popFirst()
      case "--quiet": quiet = true
      case "--leading": leading = true
      case "--append": append = true
      case "--max-submissions": maxSubmissions = Self.number(remaining.popFirst(), flag)
      case "--minimum-spacing-ms":
        minimumSpacingMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--log-level": logLevel = remaining.popFirst()
      case "--name": name = remaining.popFirst() ?? name
      case "--concurrency": concurrency = Self.number(remaining.popFirst(), flag)
      case "--lease-ms": leaseMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--record-timeout-ms":
        recordTimeoutMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--record-retry-ms":
        recordRetryMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--handler-ms": handlerMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--handler-max-ms": handlerMaxMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--max-attempts": maxAttempts = Self.number(remaining.popFirst(), flag)
      case "--retry-backoff-ms":
        retryBackoffMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--observe-cancel-ms":
        observeCancellationMilliseconds = Self.number(remaining.popFirst(), flag)
      default:
        FileHandle.standardError.write(
          Data("dpd-postgres-test-worker: unknown option \(flag)\n".utf8))
        exit(2)
      }
    }
  }

  private static func number(_ text: String?, _ flag: String) -> Int {
    guard let text, let value = Int(text), value >= 0 else {
      FileHandle.standardError.write(
        Data("dpd-postgres-test-worker: \(flag) needs a number\n".utf8))
      exit(2)
    }
    return value
  }
}
