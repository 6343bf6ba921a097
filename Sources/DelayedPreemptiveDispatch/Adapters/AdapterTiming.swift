import Dispatch

/// The time an adapter runs on: how it reads the time and how it makes the one
/// ``DelayedPreemptiveDispatchQueue`` that is its only timer.
///
/// In real time both follow `DispatchTime` (the monotonic clock the queue's `asyncAfter` uses);
/// with a clock, both follow that clock. Instants are offsets on one time line, so an adapter
/// never compares readings of two different clocks.
struct AdapterTiming: Sendable {
  /// The current instant, as an offset on the adapter's time line.
  let now: @Sendable () -> Duration
  private let queueMaker: @Sendable (String, DelayOptions) -> DelayedPreemptiveDispatchQueue
  /// The clock, when it is a ``SchedulingClock``: it awaits the callbacks a firing causes.
  private var scheduler: (any SchedulingClock)?

  /// Real time: `DispatchTime` readings and an `asyncAfter`-driven queue.
  static var realTime: AdapterTiming {
    AdapterTiming(
      now: { .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds)) },
      queueMaker: { label, options in
        DelayedPreemptiveDispatchQueue(label: label, options: options)
      })
  }

  /// Any clock with `Duration`: readings of `clock`, and a queue whose timer sleeps on it.
  static func clock<C: Clock>(_ clock: C) -> AdapterTiming where C.Duration == Duration {
    let origin = clock.now
    var timing = AdapterTiming(
      now: { origin.duration(to: clock.now) },
      queueMaker: { label, options in
        DelayedPreemptiveDispatchQueue(label: label, clock: clock, options: options)
      })
    timing.scheduler = clock as? any SchedulingClock
    return timing
  }

  /// Runs `body`, the firing of the adapter's timer. On a ``SchedulingClock``, `body` gets a
  /// ``FiredCallbacks`` to enqueue its callbacks through, and the clock awaits them before it
  /// moves further; otherwise it gets `nil`.
  func firing<Result>(_ body: (FiredCallbacks?) -> Result) -> Result {
    guard let scheduler else { return body(nil) }
    let fired = FiredCallbacks()
    let result = body(fired)
    if !fired.isEmpty {
      scheduler.schedule(after: .zero, tolerance: nil) { await fired.wait() }
    }
    return result
  }

  /// Makes the adapter's timer: a queue with no task of its own (each submission brings one).
  func makeQueue(label: String, options: DelayOptions) -> DelayedPreemptiveDispatchQueue {
    queueMaker(label, options)
  }
}

/// Where an adapter's callbacks run: the queue the user gave, or a serial queue of its own.
///
/// Adapters enqueue a callback while they hold their lock, right where the state change is
/// decided. Enqueueing runs no user code, and it makes the callbacks of a serial queue run in
/// the order of the state changes they report.
struct CallbackQueue: Sendable {
  let queue: DispatchQueue

  init(given: DispatchQueue?, label: String) {
    queue = given ?? makeSerialQueue(label: label, qos: .unspecified, target: nil)
  }

  /// Enqueues `callback`; with `fired`, the clock that fired the timer awaits it.
  func send(_ callback: @escaping @Sendable () -> Void, tracking fired: FiredCallbacks? = nil) {
    let work: @Sendable () -> Void = fired.map { $0.track(callback) } ?? callback
    queue.async(execute: work)
  }
}
