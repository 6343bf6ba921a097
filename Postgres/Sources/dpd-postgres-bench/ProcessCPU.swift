import Foundation

/// The CPU time (user and system) that processes have used so far, read from `/proc`, for the
/// drain's CPU per run on each side: the worker processes', and the database server's (every
/// process named `postgres`). Nil where `/proc` is not there (not Linux).
enum ProcessCPU {
  /// Seconds of CPU used by the process `pid`, or nil when it cannot be read.
  static func seconds(pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let end = stat.lastIndex(of: ")")
    else { return nil }
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else {
      return nil
    }
    return (user + system) / ticksPerSecond
  }

  /// Seconds of CPU used by the processes named `name` that are running now, by pid.
  static func seconds(named name: String) -> [Int32: Double] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
      return [:]
    }
    var result: [Int32: Double] = [:]
    for entry in entries {
      guard let pid = Int32(entry),
        let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
        comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
        let used = seconds(pid: pid)
      else { continue }
      result[pid] = used
    }
    return result
  }

  /// The CPU used between two readings of ``seconds(named:)``: a process that started in
  /// between counts whole, one that ended in between is missed.
  static func used(from before: [Int32: Double], to after: [Int32: Double]) -> Double {
    after.reduce(0) { $0 + $1.value - (before[$1.key] ?? 0) }
  }

  private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
}
