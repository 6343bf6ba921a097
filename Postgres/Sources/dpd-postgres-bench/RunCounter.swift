import Foundation

/// Counts the lines that worker processes print, one per run, from their pipes, each on a
/// thread of its own, and the instant (seconds since 1970) at which the count reached each tenth
/// of `total`.
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

  /// Counts the newlines read from `handle` until its end.
  func count(_ handle: FileHandle) {
    let thread = Thread { [self] in
      while true {
        let data = handle.availableData
        if data.isEmpty { return }
        add(data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) })
      }
    }
    thread.start()
  }

  private func add(_ lines: Int) {
    let now = Date().timeIntervalSince1970
    lock.lock()
    defer { lock.unlock() }
    counted += lines
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
