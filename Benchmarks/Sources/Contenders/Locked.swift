#if canImport(Darwin)
  import Darwin
#else
  import Glibc
#endif

/// A value behind a `pthread_mutex_t`: the lock the seed style, the `DispatchWorkItem` idiom
/// and the lower bound share, so that none of them wins by its choice of lock.
public final class Locked<State>: @unchecked Sendable {
  // Sound as `@unchecked Sendable`: `state` is only touched inside `withLock`, which holds the
  // mutex for the whole access; the mutex lives at a stable heap address for the box's life.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var state: State

  public init(_ state: State) {
    self.state = state
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deinitialize(count: 1)
    mutex.deallocate()
  }

  /// Runs `body` with exclusive access to the state.
  public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&state)
  }
}
