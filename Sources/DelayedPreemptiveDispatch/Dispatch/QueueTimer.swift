import Dispatch

/// The time line of a ``DelayedPreemptiveDispatchQueue``: how it reads the time and arms its
/// timer. The queue arms at most one live timer at a time; a timer that is no longer live still
/// fires, and is a no-op by generation.
protocol QueueTimer: Sendable {
  func now() -> Tick
  /// Calls `fire` on `queue` once `deadline` is reached.
  func arm(
    at deadline: Tick, tolerance: Duration?, on queue: DispatchQueue,
    fire: @escaping @Sendable () -> Void)
}

/// Real time: `DispatchTime` (the monotonic clock) and `asyncAfter`.
struct DispatchQueueTimer: QueueTimer {
  func now() -> Tick { Tick(nanoseconds: DispatchTime.now().uptimeNanoseconds) }

  func arm(
    at deadline: Tick, tolerance: Duration?, on queue: DispatchQueue,
    fire: @escaping @Sendable () -> Void
  ) {
    // `asyncAfter` takes no leeway; the system applies its own. A deadline centuries away (a
    // saturated huge delay) is "never", which Dispatch spells `.distantFuture`.
    let time =
      deadline.nanoseconds >= Self.never
      ? DispatchTime.distantFuture : DispatchTime(uptimeNanoseconds: deadline.nanoseconds)
    queue.asyncAfter(deadline: time, execute: fire)
  }

  /// About 146 years of uptime: no real deadline reaches it.
  private static var never: UInt64 { UInt64(Int64.max) / 2 }

}

/// Any clock: ticks are offsets from the clock's instant at `init`. A ``SchedulingClock`` is
/// asked to call back, so it can await the fired work; any other clock is slept on in a task.
struct ClockQueueTimer<C: Clock>: QueueTimer where C.Duration == Duration {
  let timeline: ClockTimeline<C>

  init(clock: C) {
    timeline = ClockTimeline(clock: clock)
  }

  func now() -> Tick { timeline.now() }

  func arm(
    at deadline: Tick, tolerance: Duration?, on queue: DispatchQueue,
    fire: @escaping @Sendable () -> Void
  ) {
    if let scheduler = timeline.scheduler {
      scheduler.schedule(after: now().duration(to: deadline), tolerance: tolerance) {
        await withCheckedContinuation { continuation in
          queue.async {
            fire()
            continuation.resume()
          }
        }
      }
      return
    }
    let (clock, instant) = (timeline.clock, timeline.instant(at: deadline))
    Task {
      do {
        try await clock.sleep(until: instant, tolerance: tolerance)
      } catch {
        return
      }
      queue.async(execute: fire)
    }
  }
}
