/// Which actor's run the current task executes, and which task that run is: an actor's
/// `flush` called from inside its own running task must not wait for itself.
@usableFromInline
struct RunningOwner: Sendable {
  @TaskLocal static var current: RunningOwner?

  let owner: ObjectIdentifier
  /// The identity of the run's own task, while it runs (its address cannot be reused then).
  let task: Int?

  /// Runs `body` as a run of the actor named `owner`, in the current task.
  @usableFromInline
  static func run(owner: ObjectIdentifier, _ body: () async -> Void) async {
    await $current.withValue(RunningOwner(owner: owner, task: currentTask())) { await body() }
  }

  /// Whether the calling task is the running task of the actor named `owner` itself; a task it
  /// spawned inherits the task-local but is a different task, and gets `false`.
  @usableFromInline
  static func isCurrentRun(of owner: ObjectIdentifier) -> Bool {
    guard let running = current, running.owner == owner else { return false }
    return running.task == currentTask()
  }

  static func currentTask() -> Int? {
    withUnsafeCurrentTask { $0?.hashValue }
  }
}
