import Dispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

/// Which keyed core's tasks the current thread is running, in a thread-local slot.
@usableFromInline
enum WorkerThread {
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

extension Array {
  /// Returns the elements and leaves the array empty.
  @inlinable
  mutating func take() -> [Element] {
    defer { self = [] }
    return self
  }
}
