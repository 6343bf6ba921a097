import Dispatch

#if canImport(Darwin)
  import Darwin
#else
  import Glibc
#endif

/// Contender 7, the floor no debouncer can beat: a locked store of (deadline, work) with no timer
/// at all. The deadline follows the same "only later" rule as the library's default policy.
/// `settle()` stands in for the timer: it sleeps until the deadline and runs the work.
public final class LowerBound: SyncDebouncer {
  private struct State {
    var deadline: UInt64 = 0
    var work: Work?
  }

  private let delay: UInt64
  private let state = Locked(State())

  public init(delay: Duration) {
    self.delay = UInt64(delay.nanoseconds)
  }

  public func submit(_ work: @escaping Work) {
    let deadline = DispatchTime.now().uptimeNanoseconds + delay
    state.withLock { state in
      state.deadline = max(state.deadline, deadline)
      state.work = work
    }
  }

  public func settle() {
    let (deadline, work) = state.withLock { state in
      defer { state.work = nil }
      return (state.deadline, state.work)
    }
    sleepUntil(uptime: deadline)
    work?()
  }
}

/// Sleeps until `DispatchTime.now().uptimeNanoseconds` reaches `uptime`, with `clock_nanosleep`.
public func sleepUntil(uptime: UInt64) {
  let now = DispatchTime.now().uptimeNanoseconds
  guard uptime > now else { return }
  monotonicSleep(nanoseconds: uptime - now)
}

/// One relative `clock_nanosleep` on the monotonic clock: the operating system's floor.
public func monotonicSleep(nanoseconds: UInt64) {
  var request = timespec(
    tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
  var remaining = timespec()
  while clock_nanosleep(CLOCK_MONOTONIC, 0, &request, &remaining) == EINTR {
    request = remaining
  }
}
