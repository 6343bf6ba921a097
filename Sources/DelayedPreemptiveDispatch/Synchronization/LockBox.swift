/// A value guarded by a ``PlatformLock``: `os_unfair_lock` on Apple platforms, `pthread_mutex_t`
/// elsewhere.
///
/// The library performs only state transitions under a state box's lock, and never calls user
/// code there; clock readings are taken before the lock. One box is not a state box: the keyed
/// queue's `combine` gate (`DispatchShell.gate`, a `LockBox<Void>`) runs the user's `combine`
/// inside ``withLock(_:)``, so that no call that can end or drop a burst (a submission, `cancel`,
/// `flush`, the timer's firing) runs while the burst's value is out of the driver for the merge.
/// That one breaks the rule that user code never runs under a lock: a slow `combine` holds up
/// those calls on every key of the instance, and a `combine` that calls back into the instance
/// takes the gate again on its own thread (a deadlock with `pthread_mutex_t`, a trap with
/// `os_unfair_lock`). Workers, which take only the state lock, are not held up.
///
/// `Sendable` only when its state is: a box shares its state between threads.
@usableFromInline
package final class LockBox<State> {
  @usableFromInline typealias Lock = PlatformLock.Primitive
  /// The lock, at the start of the one allocation that holds both the lock and the state.
  @usableFromInline let lock: UnsafeMutablePointer<Lock>

  /// The state, after the lock in the same allocation: a box costs two allocations (this object
  /// and its storage), not three. Behind a pointer rather than a stored `var`, so that an
  /// access costs no dynamic exclusivity check: the lock already makes it exclusive.
  @inlinable var state: UnsafeMutablePointer<State> {
    (UnsafeMutableRawPointer(lock) + Self.stateOffset).assumingMemoryBound(to: State.self)
  }

  /// - Precondition: `State` needs no alignment beyond ``maxStateAlignment``.
  package init(_ initialState: State) {
    precondition(
      MemoryLayout<State>.alignment <= Self.maxStateAlignment,
      "LockBox: \(State.self) needs an alignment of \(MemoryLayout<State>.alignment) bytes")
    let stateOffset = Self.stateOffset
    let storage = UnsafeMutableRawPointer.allocate(
      byteCount: stateOffset + MemoryLayout<State>.size,
      alignment: max(MemoryLayout<Lock>.alignment, Self.maxStateAlignment))
    (storage + stateOffset).bindMemory(to: State.self, capacity: 1).initialize(to: initialState)
    lock = storage.bindMemory(to: Lock.self, capacity: 1)
    PlatformLock.initialize(lock)
  }

  deinit {
    PlatformLock.destroy(lock)
    state.deinitialize(count: 1)
    UnsafeMutableRawPointer(lock).deallocate()
  }

  /// Where the state starts in the storage: after the lock, aligned for any `State`.
  ///
  /// A constant that does not depend on `State`: a state that holds a type of the standard
  /// library whose layout is known only at run time (the stream's `CheckedContinuation`) would
  /// otherwise have its alignment read from its metadata on every access.
  @inlinable static var stateOffset: Int {
    (MemoryLayout<Lock>.size + maxStateAlignment - 1) / maxStateAlignment * maxStateAlignment
  }

  /// The largest alignment a state may need (that of any type the library keeps under a lock).
  @inlinable static var maxStateAlignment: Int { 16 }

  /// Runs `body` with exclusive access to the state.
  @inlinable
  package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
    acquire()
    defer { release() }
    return try body(&state.pointee)
  }

  @inlinable
  func acquire() {
    PlatformLock.acquire(lock)
  }

  @inlinable
  func release() {
    PlatformLock.release(lock)
  }
}

// Sound as `@unchecked Sendable`: `state` is only read or written inside `withLock`, which holds
// `lock` for the whole access; `lock` and `state` live at stable heap addresses that are
// initialised in `init` and destroyed only in `deinit`, when no other reference exists. The
// state itself crosses threads, so it must be `Sendable`.
extension LockBox: @unchecked Sendable where State: Sendable {}
