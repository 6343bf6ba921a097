import DelayedPreemptiveDispatch

/// The library's keyed queue: one instance, one timer, every key.
public final class KeyedQueueContender: KeyedDebouncer {
  public let queue: KeyedDelayedPreemptiveDispatchQueue<Int, Void>

  public init(task: @escaping @Sendable (Int) -> Void) {
    queue = KeyedDelayedPreemptiveDispatchQueue(label: "bench.keyed") { key, _ in task(key) }
  }

  public func submit(_ key: Int, delay: Duration) {
    queue.delay(key, for: delay)
  }

  public func cancelAll() {
    queue.cancelAll()
  }
}

/// The library's keyed actor on `ContinuousClock`: one instance, one timer, every key; each call
/// awaited from the workload's task, a hop onto the actor and back.
public final class KeyedActorContender: AsyncKeyedDebouncer {
  public let actor: KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock>

  public init(task: @escaping @Sendable (Int) -> Void) {
    actor = KeyedDelayedPreemptiveActor { key, _ in task(key) }
  }

  public func submit(_ key: Int, delay: Duration) async {
    await actor.delay(key, for: delay)
  }

  public func cancelAll() async {
    await actor.cancelAll()
  }
}

/// What a service writes today: a locked `Dictionary` of `DelayedPreemptiveDispatchQueue`, one
/// queue made on a key's first submission. It never prunes idle keys (that would race with a
/// late submission unless written with care), as most such code does not.
public final class QueueDictionary: KeyedDebouncer {
  private let queues = Locked([Int: DelayedPreemptiveDispatchQueue]())
  private let task: @Sendable (Int) -> Void

  public init(task: @escaping @Sendable (Int) -> Void) {
    self.task = task
  }

  public func submit(_ key: Int, delay: Duration) {
    let queue = queues.withLock { queues in
      if let queue = queues[key] { return queue }
      let queue = DelayedPreemptiveDispatchQueue(label: "bench.key") { [task] in task(key) }
      queues[key] = queue
      return queue
    }
    queue.delay(for: delay)
  }

  public func cancelAll() {
    let queues = queues.withLock { queues in
      defer { queues = [:] }
      return queues
    }
    for queue in queues.values { queue.cancel() }
  }
}
