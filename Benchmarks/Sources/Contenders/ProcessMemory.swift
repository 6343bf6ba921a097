import CHeapUsage

#if canImport(Glibc)
  import Glibc
#endif

/// What the process holds right now: bytes `malloc` has handed out and not taken back, and the
/// resident set. Growth between two readings is what pending submissions cost.
public struct ProcessMemory: Sendable {
  public var heapBytes: Int
  public var residentBytes: Int

  public static func current() -> ProcessMemory {
    #if canImport(Glibc)
      ProcessMemory(heapBytes: c_heap_bytes_in_use(), residentBytes: residentSetBytes())
    #else
      ProcessMemory(heapBytes: c_heap_bytes_in_use(), residentBytes: 0)
    #endif
  }

  #if canImport(Glibc)
    /// The second field of `/proc/self/statm`, in pages, as bytes.
    private static func residentSetBytes() -> Int {
      let descriptor = open("/proc/self/statm", O_RDONLY)
      guard descriptor >= 0 else { return 0 }
      defer { close(descriptor) }
      var buffer = [UInt8](repeating: 0, count: 128)
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      guard count > 0 else { return 0 }
      let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
      guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
      return pages * sysconf(Int32(_SC_PAGESIZE))
    }
  #endif
}
