import Dispatch

/// Contender 4, the common GCD idiom: cancel the previous `DispatchWorkItem`, then `asyncAfter` a
/// new one. A cancelled item still holds its timer until its deadline.
public final class WorkItemDebouncer: SyncDebouncer {
  private let delay: Duration
  private let queue = DispatchQueue(label: "bench.workitem")
  private let pending = Locked<DispatchWorkItem?>(nil)

  public init(delay: Duration) {
    self.delay = delay
  }

  public func submit(_ work: @escaping Work) {
    let item = DispatchWorkItem(block: work)
    let previous = pending.withLock { pending in
      defer { pending = item }
      return pending
    }
    previous?.cancel()
    let deadline = DispatchTime.now() + .nanoseconds(Int(delay.nanoseconds))
    queue.asyncAfter(deadline: deadline, execute: item)
  }
}
