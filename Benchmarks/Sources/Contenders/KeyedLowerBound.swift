import Dispatch

/// The floor for debouncing per key: a `Dictionary` of (key, deadline, value) under one lock,
/// with no timer. A submission inserts the key, or moves its deadline later (the library's
/// default policy). `settle()` stands in for the timer: it sleeps until the latest deadline,
/// then runs every key's task on the calling thread.
public final class KeyedLowerBound: KeyedDebouncer {
  private struct Entry {
    var deadline: UInt64 = 0
    var value: Void = ()

    mutating func extend(to deadline: UInt64) {
      self.deadline = max(self.deadline, deadline)
    }
  }

  private let entries = Locked([Int: Entry]())
  private let task: @Sendable (Int) -> Void

  public init(task: @escaping @Sendable (Int) -> Void) {
    self.task = task
  }

  public func submit(_ key: Int, delay: Duration) {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(delay.nanoseconds, 0))
    entries.withLock { $0[key, default: Entry()].extend(to: deadline) }
  }

  public func settle() {
    let due = entries.withLock { entries in
      defer { entries = [:] }
      return entries
    }
    sleepUntil(uptime: due.values.map(\.deadline).max() ?? 0)
    for key in due.keys { task(key) }
  }

  public func cancelAll() {
    entries.withLock { $0 = [:] }
  }
}
