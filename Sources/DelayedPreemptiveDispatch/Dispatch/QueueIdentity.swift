import Dispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

/// Tells on which queue the calling code runs: each core marks its queue with its identity, and
/// the main queue is marked once a queue targets it.
enum QueueIdentity {
  static let key = DispatchSpecificKey<ObjectIdentifier>()
  private static let mainKey = DispatchSpecificKey<Bool>()

  /// Marks the main queue once; `DispatchQueue.main` is not one object on every platform, so
  /// the mark is what identifies it.
  private static let mainQueueMarked: Bool = {
    DispatchQueue.main.setSpecific(key: mainKey, value: true)
    return true
  }()

  static func isMainQueue(_ queue: DispatchQueue) -> Bool {
    _ = mainQueueMarked
    return queue.getSpecific(key: mainKey) == true
  }

  /// In a block of the main queue (or of a queue that targets it), or on the main thread.
  static var isOnMainQueue: Bool {
    if DispatchQueue.getSpecific(key: mainKey) == true { return true }
    #if canImport(Darwin)
      return pthread_main_np() != 0
    #elseif canImport(Glibc)
      // The main thread's thread id is the process id; "/proc/thread-self" names "PID/task/TID".
      var buffer = [CChar](repeating: 0, count: 64)
      let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
      guard length > 0 else { return false }
      let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      return path.split(separator: "/").last.map { Int32($0) == getpid() } ?? false
    #else
      return false
    #endif
  }
}
