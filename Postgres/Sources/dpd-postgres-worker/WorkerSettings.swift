import Foundation

/// The worker's command-line options (see main.swift).
struct WorkerSettings: Sendable {
  var name = "demo"
  var concurrency = 4
  var leaseMilliseconds = 30_000
  var handlerMilliseconds = 0
  var record = false
  var quiet = false
  /// Asks for `options.leading`, which the queue refuses with a precondition message: the tests
  /// check that message through this flag.
  var leading = false

  init(arguments: [String]) {
    var remaining = arguments[...]
    while let flag = remaining.popFirst() {
      switch flag {
      case "--record": record = true
      case "--quiet": quiet = true
      case "--leading": leading = true
      case "--name": name = remaining.popFirst() ?? name
      case "--concurrency": concurrency = Self.number(remaining.popFirst(), flag)
      case "--lease-ms": leaseMilliseconds = Self.number(remaining.popFirst(), flag)
      case "--handler-ms": handlerMilliseconds = Self.number(remaining.popFirst(), flag)
      default:
        FileHandle.standardError.write(Data("dpd-postgres-worker: unknown option \(flag)\n".utf8))
        exit(2)
      }
    }
  }

  private static func number(_ text: String?, _ flag: String) -> Int {
    guard let text, let value = Int(text), value >= 0 else {
      FileHandle.standardError.write(Data("dpd-postgres-worker: \(flag) needs a number\n".utf8))
      exit(2)
    }
    return value
  }
}
