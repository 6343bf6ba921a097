import Foundation
import Logging

@testable import DelayedPreemptiveDispatchPostgres

/// Collects every log line of the loggers it makes, at every level, for tests that check what
/// the queue logs (rule P9) and what it never logs (a password, P12).
final class LogCollector: Sendable {
  /// One line as it was logged: its level, its message, and its metadata rendered as
  /// `key=value` pairs (the logger's own and the call's).
  struct Line: Sendable, CustomStringConvertible {
    var level: Logger.Level
    var message: String
    var metadata: String

    var description: String { "\(level): \(message) \(metadata)" }
  }

  private let collected = Locked<[Line]>([])

  var lines: [Line] { collected.withLock { $0 } }

  /// A logger at level trace whose lines this collector keeps.
  func logger(label: String = "test") -> Logger {
    Logger(label: label) { _ in CollectingLogHandler(collector: self) }
  }

  /// Whether a line at `level` or more severe contains `text` in its message.
  func contains(_ text: String, atLeast level: Logger.Level) -> Bool {
    lines.contains { $0.level >= level && $0.message.contains(text) }
  }

  fileprivate func append(_ line: Line) {
    collected.withLock { $0.append(line) }
  }
}

/// The log handler behind ``LogCollector/logger(label:)``.
private struct CollectingLogHandler: LogHandler {
  let collector: LogCollector
  var metadata: Logger.Metadata = [:]
  var logLevel: Logger.Level = .trace

  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  func log(event: LogEvent) {
    let merged = metadata.merging(event.metadata ?? [:]) { _, call in call }
    collector.append(
      LogCollector.Line(
        level: event.level, message: event.message.description,
        metadata: merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
          .joined(separator: " ")))
  }
}
