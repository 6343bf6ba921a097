import Dispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

/// A thread-local mark of the dispatch shell whose worker runs on the current thread: a worker
/// sets it around the tasks it runs, so that `wait(timeout:)` called from one of them can stop
/// with a message instead of waiting for itself.
@usableFromInline
enum WorkerMark {
  private static let slot: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key, nil)
    precondition(status == 0, "pthread_key_create failed with \(status)")
    return key
  }()

  @usableFromInline
  static func mark(_ core: AnyObject?) {
    pthread_setspecific(
      slot, core.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
  }

  static func isRunning(_ core: AnyObject) -> Bool {
    pthread_getspecific(slot) == UnsafeMutableRawPointer(Unmanaged.passUnretained(core).toOpaque())
  }
}
