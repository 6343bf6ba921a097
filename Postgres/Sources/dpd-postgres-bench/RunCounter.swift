import Foundation

/// Adds up the counts of runs that worker processes print, a number per line (`BenchWorker`),
/// from their pipes, each on a thread of its own, and the instant (seconds since 1970) at which
/// the sum reached each tenth of `total`.
final class RunCounter: @unchecked Sendable {
  // Guarded by `lock`.
  private let lock = NSLock()
  private var counted = 0
  private var reached: [Double] = []
  let total: Int

  init(total: Int) {
    precondition(total >= 10, "RunCounter: total must be at least 10, not \(total)")
    self.total = total
  }

  /// Adds up the numbers of the lines read from `handle` until its end.
  func count(_ handle: FileHandle) {
    let thread = Thread { [self] in
      var partial: [UInt8] = []
      while true {
        let data = handle.availableData
        if data.isEmpty { return }
        var sum = 0
        for byte in data {
          if byte == UInt8(ascii: "\n") {
            sum += Int(String(decoding: partial, as: UTF8.self)) ?? 0
            partial.removeAll(keepingCapacity: true)
          } else {
            partial.append(byte)
          }
        }
        add(sum)
      }
    }
    thread.start()
  }

  private func add(_ runs: Int) {
    let now = Date().timeIntervalSince1970
    lock.lock()
    defer { lock.unlock() }
    counted += runs
    while reached.count < 10, counted >= total * (reached.count + 1) / 10 {
      reached.append(now)
    }
  }

  var isDone: Bool {
    lock.lock()
    defer { lock.unlock() }
    return reached.count == 10
  }

  /// The instants at which the count reached each tenth of `total`, in order.
  func tenths() -> [Double] {
    lock.lock()
    defer { lock.unlock() }
    return reached
  }
}
