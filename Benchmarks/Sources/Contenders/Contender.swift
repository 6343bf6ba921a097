/// The seven ways of delaying a task that every workload measures, in the order of the tables.
public enum Contender: String, CaseIterable, Sendable {
  case queue
  case actor
  case seedStyle = "seed-style"
  case workItem = "work-item"
  case taskPerCall = "task-per-call"
  case debounce
  case lowerBound = "lower-bound"

  /// How a workload drives the contender: from threads, or with `await` from tasks.
  public enum Driver {
    case sync(any SyncDebouncer.Type)
    case async(any AsyncDebouncer.Type)
  }

  public var driver: Driver {
    switch self {
    case .queue: .sync(QueueContender.self)
    case .actor: .async(ActorContender.self)
    case .seedStyle: .sync(SeedStyleDebouncer.self)
    case .workItem: .sync(WorkItemDebouncer.self)
    case .taskPerCall: .async(TaskPerCallDebouncer.self)
    case .debounce: .sync(StreamDebouncer.self)
    case .lowerBound: .sync(LowerBound.self)
    }
  }

  /// The benchmark name: `workload:contender`, free of dots and spaces so that exported file
  /// names split cleanly.
  public func benchmarkName(_ workload: String) -> String {
    "\(workload):\(rawValue)"
  }
}

/// A task that does nothing; one closure, made once, so submitting it allocates nothing.
public let noop: Work = {}
/// The same for the Swift-concurrency contenders.
public let asyncNoop: AsyncWork = {}
