import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting

/// A test clock whose timers are late on purpose: ``advance(to:)`` moves the time and fires
/// nothing; a due timer fires only when the test calls ``release()``, and then reads the
/// current time, later than its deadline. It stands for a real clock under load, where every
/// timer fires a little late and a submission can arrive in between (rule T7, "due means due").
///
/// Like `ManualClock`, it is a ``SchedulingClock``, so `release()` awaits the work each timer
/// started; its instants are `ManualClock`'s.
final class HeldClock: SchedulingClock, Sendable {
  typealias Instant = ManualClock.Instant

  private struct Timer {
    var deadline: Instant
    var id: Int
    var action: @Sendable () async -> Void
  }

  private struct State {
    var now = Instant(offset: .zero)
    var timers: [Timer] = []
    var nextID = 0
  }

  private let state = LockBox(State())

  var now: Instant { state.withLock { $0.now } }

  var minimumResolution: Duration { .zero }

  /// Moves the time to `offset` from the clock's creation; fires nothing.
  func advance(to offset: Duration) {
    state.withLock { $0.now = max($0.now, Instant(offset: offset)) }
  }

  /// Fires every timer due by now, in deadline order (ties in arming order), each at the current
  /// time, and awaits the work each one starts; timers armed meanwhile fire too when due.
  func release() async {
    while let timer = state.withLock({ state -> Timer? in
      let due = state.timers.indices.filter { state.timers[$0].deadline <= state.now }
      guard
        let first = due.min(by: {
          (state.timers[$0].deadline, state.timers[$0].id)
            < (state.timers[$1].deadline, state.timers[$1].id)
        })
      else { return nil }
      return state.timers.remove(at: first)
    }) {
      await timer.action()
    }
  }

  func schedule(
    after delay: Duration, tolerance: Duration?, action: @escaping @Sendable () async -> Void
  ) {
    guard delay < .nanoseconds(Int64.max) else { return }
    state.withLock { state in
      state.timers.append(
        Timer(deadline: state.now.advanced(by: max(delay, .zero)), id: state.nextID, action: action)
      )
      state.nextID += 1
    }
  }

  /// Sleeping is not what this clock is for: the shells only schedule on it.
  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    preconditionFailure("HeldClock: the shells under test schedule on it; nothing sleeps on it")
  }
}
