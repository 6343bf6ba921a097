/// The ways of debouncing per key that the keyed workloads measure, in the order of the tables.
public enum KeyedContender: String, CaseIterable, Sendable {
  case keyedQueue = "keyed-queue"
  case keyedActor = "keyed-actor"
  case queueDictionary = "queue-dictionary"
  case taskPerKey = "task-per-key"
  case lowerBound = "lower-bound"

  /// How a workload drives the contender: from a thread, or with `await` from one task.
  public enum Driver {
    case sync(any KeyedDebouncer.Type)
    case async(any AsyncKeyedDebouncer.Type)
  }

  public var driver: Driver {
    switch self {
    case .keyedQueue: .sync(KeyedQueueContender.self)
    case .keyedActor: .async(KeyedActorContender.self)
    case .queueDictionary: .sync(QueueDictionary.self)
    case .taskPerKey: .sync(TaskPerKey.self)
    case .lowerBound: .sync(KeyedLowerBound.self)
    }
  }

  /// The benchmark name: `workload:contender`, free of dots and spaces.
  public func benchmarkName(_ workload: String) -> String {
    "\(workload):\(rawValue)"
  }
}

/// A debouncer per key, called from plain threads, with `Value == Void` (the key says it all):
/// each `submit` for a key preempts that key's pending one, and `task` runs once per key and
/// burst, after the key's quiet period. Keys are `Int`s, so that hashing costs the same for all.
public protocol KeyedDebouncer: Sendable {
  init(task: @escaping @Sendable (Int) -> Void)
  /// Submits `key`, due `delay` from now (or later, if the key's pending deadline is later).
  func submit(_ key: Int, delay: Duration)
  /// Runs what is due when the contender has no timer of its own (the lower bound); else nothing.
  func settle()
  /// Ends every pending key without running it, so that nothing outlives the iteration.
  func cancelAll()
}

extension KeyedDebouncer {
  public func settle() {}
}

/// A debouncer per key called with `await`, as an actor is: the workloads submit from one task,
/// awaiting each call, as a user's code does. Otherwise the same contract as ``KeyedDebouncer``;
/// it has no `settle()`, as it has a timer of its own.
public protocol AsyncKeyedDebouncer: Sendable {
  init(task: @escaping @Sendable (Int) -> Void)
  /// Submits `key`, due `delay` from now (or later, if the key's pending deadline is later).
  func submit(_ key: Int, delay: Duration) async
  /// Ends every pending key without running it, so that nothing outlives the iteration.
  func cancelAll() async
}
