import ArgumentParser
import DelayedPreemptiveDispatchPostgres

/// Which kept failures a command acts on: all of a key's, or one by its id.
struct FailureSelection: ParsableArguments {
  @Argument(help: "The key whose kept failures to act on, oldest first.")
  var key: String?

  @Option(help: "The id of one kept failure (as `state` lists it), instead of a key.")
  var id: Int64?

  func validate() throws {
    if (key == nil) == (id == nil) {
      throw ValidationError("Give either a key or --id, not both.")
    }
  }

  /// How the output names what was selected.
  var named: String { key ?? "id \(id ?? 0)" }
}

/// `retry KEY` or `retry --id N`: runs kept failures again.
struct RetryCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "retry",
    abstract: "Runs kept failures again: each a burst of its own with its kept value.",
    discussion: """
      With a key, every kept failure of the key, oldest first; with --id, that one. Prints \
      whether there was one; exits 0 either way, 1 when the database could not be asked.
      """)

  @OptionGroup var queueOptions: QueueOptions
  @OptionGroup var selection: FailureSelection

  func run() async throws {
    let selection = selection
    let retried = try await queueOptions.withQueue { queue in
      if let id = selection.id { return try await queue.retryFailure(id: id) }
      return try await queue.retryFailure(selection.key ?? "")
    }
    printLine(
      retried
        ? "retried \(selection.named): it runs again now"
        : "no kept failure for \(selection.named)")
  }
}

/// `discard KEY` or `discard --id N`: removes kept failures.
struct DiscardCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "discard",
    abstract: "Removes kept failures, with their values and last errors.",
    discussion: """
      With a key, every kept failure of the key; with --id, that one. Prints whether there was \
      one; exits 0 either way, 1 when the database could not be asked.
      """)

  @OptionGroup var queueOptions: QueueOptions
  @OptionGroup var selection: FailureSelection

  func run() async throws {
    let selection = selection
    let discarded = try await queueOptions.withQueue { queue in
      if let id = selection.id { return try await queue.discardFailure(id: id) }
      return try await queue.discardFailure(selection.key ?? "")
    }
    printLine(
      discarded ? "discarded \(selection.named)" : "no kept failure for \(selection.named)")
  }
}
