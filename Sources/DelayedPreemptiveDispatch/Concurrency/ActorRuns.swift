/// How an actor shell runs its decided runs: each in an unstructured task that starts once the
/// previous one has returned, so runs never overlap and start in the order they were decided.
///
/// With `cancelsStaleRuns`, it keeps the tasks of runs that have not finished, so that a new
/// burst can cancel them (``DelayedPreemptiveActor/init(clock:options:cancelsRunningTask:task:)``).
struct ActorRuns: Sendable {
  let cancelsStaleRuns: Bool
  private var last: Task<Void, Never>?
  private var nextID: UInt64 = 0
  private var unfinished: [UInt64: Task<Void, Never>] = [:]

  init(cancelsStaleRuns: Bool) {
    self.cancelsStaleRuns = cancelsStaleRuns
  }

  /// Starts `work` after every earlier run, off the actor, then calls `completion` with the
  /// run's id. Returns the run's task.
  mutating func enqueue(
    owner: ObjectIdentifier, _ work: @escaping @Sendable () async -> Void,
    completion: @escaping @Sendable (UInt64) async -> Void
  ) -> Task<Void, Never> {
    let previous = last
    let id = nextID
    nextID &+= 1
    let run = Task {
      await previous?.value
      let running = RunningOwner(owner: owner, task: RunningOwner.currentTask())
      await RunningOwner.$current.withValue(running) { await work() }
      await completion(id)
    }
    last = run
    if cancelsStaleRuns { unfinished[id] = run }
    return run
  }

  /// The run named `id` has returned.
  mutating func finished(_ id: UInt64) {
    if cancelsStaleRuns { unfinished[id] = nil }
  }

  /// A new burst started: with `cancelsStaleRuns`, cancels every run that has not finished.
  mutating func cancelStaleRuns() {
    guard cancelsStaleRuns, !unfinished.isEmpty else { return }
    for run in unfinished.values { run.cancel() }
    unfinished = [:]
  }

  /// Whether the calling task is the running task of the actor named `owner` itself; a task it
  /// spawned inherits the task-local but is a different task, and gets `false`.
  static func isCurrentRun(of owner: ObjectIdentifier) -> Bool {
    guard let running = RunningOwner.current, running.owner == owner else { return false }
    return running.task == RunningOwner.currentTask()
  }
}

/// Which actor's run the current task executes, and which task that run is.
struct RunningOwner: Sendable {
  @TaskLocal static var current: RunningOwner?

  let owner: ObjectIdentifier
  /// The identity of the run's own task, while it runs (its address cannot be reused then).
  let task: Int?

  static func currentTask() -> Int? {
    withUnsafeCurrentTask { $0?.hashValue }
  }
}
