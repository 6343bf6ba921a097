import ArgumentParser
import DelayedPreemptiveDispatchPostgres

/// `retry KEY`: runs a kept failure again.
struct RetryCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "retry",
    abstract: "Runs a kept failure again: a fresh burst with its kept value, due now.",
    discussion: """
      Prints whether the key had a kept failure; exits 0 either way, 1 when the database \
      could not be asked.
      """)

  @OptionGroup var queueOptions: QueueOptions

  @Argument(help: "The key of the kept failure.")
  var key: String

  func run() async throws {
    let key = key
    let retried = try await queueOptions.withQueue { try await $0.retryFailure(key) }
    printLine(
      retried ? "retried \(key): it runs again now" : "no kept failure for \(key)")
  }
}

/// `discard KEY`: removes a kept failure.
struct DiscardCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "discard",
    abstract: "Removes a kept failure, with its value and last error.",
    discussion: """
      Prints whether the key had a kept failure; exits 0 either way, 1 when the database \
      could not be asked.
      """)

  @OptionGroup var queueOptions: QueueOptions

  @Argument(help: "The key of the kept failure.")
  var key: String

  func run() async throws {
    let key = key
    let discarded = try await queueOptions.withQueue { try await $0.discardFailure(key) }
    printLine(discarded ? "discarded \(key)" : "no kept failure for \(key)")
  }
}
