/// The common Swift-concurrency idiom per key: a locked `Dictionary` of `Task`s, each sleeping
/// for the delay; a submission cancels the key's task and starts a new one. A task that wakes
/// removes itself (if it is still the key's) and runs the work.
public final class TaskPerKey: KeyedDebouncer {
  private struct Pending {
    var generation: UInt64
    var task: Task<Void, Never>
  }

  private struct State {
    var generation: UInt64 = 0
    var pending: [Int: Pending] = [:]
  }

  private let state = Locked(State())
  private let task: @Sendable (Int) -> Void

  public init(task: @escaping @Sendable (Int) -> Void) {
    self.task = task
  }

  public func submit(_ key: Int, delay: Duration) {
    let replaced = state.withLock { state in
      state.generation += 1
      let generation = state.generation
      let sleeper = Task { [state = self.state, task] in
        do {
          try await Task.sleep(for: delay)
        } catch {
          return
        }
        let isCurrent = state.withLock { state in
          guard state.pending[key]?.generation == generation else { return false }
          state.pending[key] = nil
          return true
        }
        if isCurrent { task(key) }
      }
      defer { state.pending[key] = Pending(generation: generation, task: sleeper) }
      return state.pending[key]?.task
    }
    replaced?.cancel()
  }

  public func cancelAll() {
    let pending = state.withLock { state in
      defer { state.pending = [:] }
      return state.pending
    }
    for entry in pending.values { entry.task.cancel() }
  }
}
