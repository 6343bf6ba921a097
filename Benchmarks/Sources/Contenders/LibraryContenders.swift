import DelayedPreemptiveDispatch

/// Contender 1: the library's Grand Central Dispatch queue.
public struct QueueContender: SyncDebouncer {
  public let queue: DelayedPreemptiveDispatchQueue
  private let delay: Duration

  public init(delay: Duration) {
    self.delay = delay
    queue = DelayedPreemptiveDispatchQueue(label: "bench.queue")
  }

  public func submit(_ work: @escaping Work) {
    queue.delay(for: delay, task: work)
  }
}

/// Contender 2: the library's actor on `ContinuousClock`.
public struct ActorContender: AsyncDebouncer {
  public let actor: DelayedPreemptiveActor<ContinuousClock>
  private let delay: Duration

  public init(delay: Duration) {
    self.delay = delay
    actor = DelayedPreemptiveActor()
  }

  public func submit(_ work: @escaping AsyncWork) async {
    await actor.delay(delay, task: work)
  }
}
