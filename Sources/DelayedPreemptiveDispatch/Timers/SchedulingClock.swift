/// A clock that can call an action at a later instant and await it.
///
/// The queue and the actor arm their single timer through this hook when their clock adopts
/// it, instead of sleeping in a `Task`. That lets a test clock, such as `ManualClock`, run every
/// due timer in deadline order and return only after the work each timer started has finished,
/// so a test never has to sleep or yield and gets the same result on every run.
///
/// Adopt it in your own test clock if you have one; a clock that does not adopt it still works,
/// through `Clock.sleep(until:tolerance:)` in an unstructured task. Such a clock's own `advance`
/// (swift-clocks' `TestClock`, say) resumes that sleep but returns without waiting for the task
/// it starts: a test advances a little past the deadline, then awaits the instance's `wait()`,
/// or the ticket's `outcome` (`TestClockRecipeTests`, in the Benchmarks package).
public protocol SchedulingClock: Clock where Duration == Swift.Duration {
  /// Calls `action` once the clock has moved `delay` past its current `now`, never inside this
  /// call, and awaits it before the clock moves further.
  ///
  /// A zero or negative `delay` is due at the current instant: a clock that moves by itself
  /// calls `action` as soon as it can; a test clock may hold it until it next moves, as
  /// `ManualClock` does (it calls it on the next `advance`, even `advance(by: .zero)`), so that
  /// what a test sees does not depend on thread timing.
  ///
  /// A `delay` of `Int64.max` nanoseconds (about 292 years) or more means "never": it is how a
  /// queue, actor or adapter arms the timer of a deadline beyond the end of its time line (a
  /// huge delay, `maxWait` or lockout). The clock may drop such an action instead of keeping
  /// it; `ManualClock` drops it, so advancing it that far runs nothing and does not stop.
  func schedule(
    after delay: Swift.Duration, tolerance: Swift.Duration?,
    action: @escaping @Sendable () async -> Void)
}
