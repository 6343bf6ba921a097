import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Where a firing timer delivers: on a serial dispatch queue (the GCD shells run the due task
/// right there, in the timer's block) or in an async context (the actors).
@usableFromInline
enum TimerDelivery: Sendable {
  case queue(DispatchQueue, @Sendable () -> Void)
  case task(@Sendable () async -> Void)
}

/// Cancels an armed timer; a timer that already fired or has no cancellation ignores it.
@usableFromInline
struct TimerHandle: Sendable {
  @usableFromInline let cancelAction: (@Sendable () -> Void)?

  /// A timer that cannot be cancelled (a ``SchedulingClock`` keeps its own list).
  static let none = TimerHandle(cancelAction: nil)

  @usableFromInline
  init(cancelAction: (@Sendable () -> Void)?) {
    self.cancelAction = cancelAction
  }

  @inlinable
  func cancel() {
    cancelAction?()
  }
}

/// The one timer abstraction of every shell: how it reads the time and arms a timer.
///
/// A shell arms at most one live timer at a time (one for the whole instance, keyed or not); a
/// timer that is no longer live may still fire, and is a no-op by generation. Shells hold what
/// they arm weakly, so a pending timer keeps no owner alive.
@usableFromInline
protocol BurstTimer: Sendable {
  func now() -> TimelineInstant
  /// Delivers once `deadline` is reached.
  func arm(at deadline: TimelineInstant, tolerance: Duration?, delivery: TimerDelivery)
    -> TimerHandle
}

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

/// A block that a cancellation empties: `asyncAfter` keeps only this small box until its
/// deadline, not what the block captured.
private final class CancellableBlock: Sendable {
  private let block: LockBox<(@Sendable () -> Void)?>

  init(_ block: @escaping @Sendable () -> Void) {
    self.block = LockBox(block)
  }

  func run() {
    block.withLock { $0.take() }?()
  }

  func cancel() {
    _ = block.withLock { $0.take() }
  }
}

/// Any clock: ticks are offsets from the clock's instant at `init`. A ``SchedulingClock`` is
/// asked to call back, so it can await the delivered work; any other clock is slept on in a
/// task, which the handle cancels.
@usableFromInline
struct ClockTimer<C: Clock>: BurstTimer where C.Duration == Duration {
  @usableFromInline let timeline: ClockTimeline<C>

  init(clock: C) {
    timeline = ClockTimeline(clock: clock)
  }

  @usableFromInline
  func now() -> TimelineInstant { timeline.now() }

  @usableFromInline
  func arm(at deadline: TimelineInstant, tolerance: Duration?, delivery: TimerDelivery)
    -> TimerHandle
  {
    if let scheduler = timeline.scheduler {
      scheduler.schedule(after: now().duration(to: deadline), tolerance: tolerance) {
        await Self.deliver(delivery)
      }
      return .none
    }
    let (clock, instant) = (timeline.clock, timeline.instant(at: deadline))
    let sleeper = Task {
      do {
        try await clock.sleep(until: instant, tolerance: tolerance)
      } catch {
        return
      }
      await Self.deliver(delivery)
    }
    return TimerHandle { sleeper.cancel() }
  }

  /// Runs the delivery and returns once it has finished: for a queue, once its block and every
  /// block it enqueued on the same queue before returning have run.
  private static func deliver(_ delivery: TimerDelivery) async {
    switch delivery {
    case .task(let fire):
      await fire()
    case .queue(let queue, let fire):
      await withCheckedContinuation { continuation in
        queue.async {
          fire()
          queue.async { continuation.resume() }
        }
      }
    }
  }
}
