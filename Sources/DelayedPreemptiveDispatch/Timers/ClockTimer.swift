import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Any clock: ticks are offsets from the clock's instant at `init`. A ``SchedulingClock`` is
/// asked to call back, so it can await the delivered work; any other clock is slept on in a
/// task, which the handle cancels.
@usableFromInline
struct ClockTimer<C: Clock>: BurstTimer where C.Duration == Duration {
  @usableFromInline let timeline: ClockTimeline<C>
  /// The clock as a ``RunTrackingClock``, when it is one (`ManualClock`): the actors start their
  /// workers through it, so that it awaits a run a submission started as a timer's work (T5).
  /// Kept here, not in ``timeline``, which the submission path reads inline.
  @usableFromInline let runTracker: (any RunTrackingClock)?

  init(clock: C) {
    timeline = ClockTimeline(clock: clock)
    runTracker = clock as? any RunTrackingClock
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

  @usableFromInline
  func saturatingNow() -> TimelineInstant { timeline.saturatingNow() }

  @usableFromInline
  func awaitOnClock(_ drained: @escaping @Sendable () async -> Void) {
    timeline.scheduler?.schedule(after: .zero, tolerance: nil, action: drained)
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
