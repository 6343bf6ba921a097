#if canImport(Glibc)
  import Glibc
#endif

/// The resident set of the process, from `/proc/self/statm`; 0 where there is none. Growth
/// between two readings is what pending submissions cost.
public enum ProcessMemory {
  public static func residentBytes() -> Int {
    #if canImport(Glibc)
      let descriptor = open("/proc/self/statm", O_RDONLY)
      guard descriptor >= 0 else { return 0 }
      defer { close(descriptor) }
      var buffer = [UInt8](repeating: 0, count: 128)
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      guard count > 0 else { return 0 }
      let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
      guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
      return pages * sysconf(Int32(_SC_PAGESIZE))
    #else
      return 0
    #endif
  }
}
