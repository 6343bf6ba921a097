import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Real time for the GCD shells: `DispatchTime` (the monotonic clock) and `asyncAfter`.
struct DispatchTimeTimer: BurstTimer {
  func now() -> TimelineInstant {
    #if canImport(Glibc)
      // The clock `DispatchTime.now()` reads on Linux (libdispatch's uptime is
      // CLOCK_MONOTONIC), read directly: the same instant, for a tenth of the instructions on
      // every submission.
      var time = timespec()
      clock_gettime(CLOCK_MONOTONIC, &time)
      return TimelineInstant(
        nanoseconds: UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec))
    #else
      return TimelineInstant(nanoseconds: DispatchTime.now().uptimeNanoseconds)
    #endif
  }

  func arm(at deadline: TimelineInstant, tolerance: Duration?, delivery: TimerDelivery)
    -> TimerHandle
  {
    // `asyncAfter` takes no leeway; the system applies its own. A deadline centuries away (a
    // saturated huge delay) is "never", which Dispatch spells `.distantFuture`.
    let time =
      deadline.nanoseconds >= Self.never
      ? DispatchTime.distantFuture : DispatchTime(uptimeNanoseconds: deadline.nanoseconds)
    switch delivery {
    case .queue(let queue, let fire):
      let block = CancellableBlock(fire)
      queue.asyncAfter(deadline: time) { block.run() }
      return TimerHandle { block.cancel() }
    case .task(let fire):
      let block = CancellableBlock { Task { await fire() } }
      DispatchQueue.global().asyncAfter(deadline: time) { block.run() }
      return TimerHandle { block.cancel() }
    }
  }

  /// About 146 years of uptime: no real deadline reaches it.
  private static var never: UInt64 { UInt64(Int64.max) / 2 }
}
