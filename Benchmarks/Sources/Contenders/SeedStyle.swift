import Dispatch

/// Contender 3, the style this library replaces: every call enters a `DispatchGroup` and leaves
/// it from its own `asyncAfter`; one `notify` runs the last task once the group drains. Flags
/// live under a lock. Each call costs a timer, and pending calls cost memory until they fire.
public final class SeedStyleDebouncer: SyncDebouncer {
  private struct State {
    var work: Work?
    var isNotifyArmed = false
  }

  private let delay: Duration
  private let queue = DispatchQueue(label: "bench.seed")
  private let group = DispatchGroup()
  private let state = Locked(State())

  public init(delay: Duration) {
    self.delay = delay
  }

  public func submit(_ work: @escaping Work) {
    group.enter()
    let needsNotify = state.withLock { state in
      state.work = work
      defer { state.isNotifyArmed = true }
      return !state.isNotifyArmed
    }
    if needsNotify {
      group.notify(queue: queue) { [state] in
        let work = state.withLock { state in
          state.isNotifyArmed = false
          defer { state.work = nil }
          return state.work
        }
        work?()
      }
    }
    let deadline = DispatchTime.now() + .nanoseconds(Int(delay.nanoseconds))
    queue.asyncAfter(deadline: deadline) { [group] in group.leave() }
  }
}
