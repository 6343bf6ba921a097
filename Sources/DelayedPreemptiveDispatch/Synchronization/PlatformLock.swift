#if canImport(Darwin)
  import os
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Bionic)
  import Bionic
#else
  #error("PlatformLock needs os_unfair_lock (Darwin) or pthread_mutex_t (Glibc, Musl, Bionic).")
#endif

/// The one platform lock of the library, at a stable address that its owner allocates:
/// `os_unfair_lock` on Apple platforms, `pthread_mutex_t` elsewhere. ``LockBox`` and the
/// shared locks of the burst records (``BurstRecordLocks``) are built on it.
///
/// It is used instead of `Synchronization.Mutex` because, on Linux, `Mutex` parks waiters on a
/// futex that ThreadSanitizer cannot see, which makes TSan report false races under contention.
/// TSan understands `pthread_mutex_t`, and `os_unfair_lock` is the cheapest lock on Darwin.
@usableFromInline
enum PlatformLock {
  #if canImport(Darwin)
    @usableFromInline typealias Primitive = os_unfair_lock
  #else
    @usableFromInline typealias Primitive = pthread_mutex_t
  #endif

  /// Initialises the lock at `lock`, which must be bound, uninitialised memory that never moves.
  static func initialize(_ lock: UnsafeMutablePointer<Primitive>) {
    #if canImport(Darwin)
      lock.initialize(to: os_unfair_lock())
    #else
      lock.initialize(to: pthread_mutex_t())
      let status = pthread_mutex_init(lock, nil)
      precondition(status == 0, "pthread_mutex_init failed with \(status)")
    #endif
  }

  /// Destroys the lock at `lock`, which nobody holds or waits for.
  static func destroy(_ lock: UnsafeMutablePointer<Primitive>) {
    #if !canImport(Darwin)
      pthread_mutex_destroy(lock)
    #endif
    lock.deinitialize(count: 1)
  }

  @inlinable @inline(__always)
  static func acquire(_ lock: UnsafeMutablePointer<Primitive>) {
    #if canImport(Darwin)
      os_unfair_lock_lock(lock)
    #else
      pthread_mutex_lock(lock)
    #endif
  }

  @inlinable @inline(__always)
  static func release(_ lock: UnsafeMutablePointer<Primitive>) {
    #if canImport(Darwin)
      os_unfair_lock_unlock(lock)
    #else
      pthread_mutex_unlock(lock)
    #endif
  }
}
