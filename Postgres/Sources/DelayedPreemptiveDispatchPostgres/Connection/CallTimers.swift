import NIOCore
import NIOPosix

/// The timers that bound a queue's database calls (the timeout of each call, and the moment its
/// probe asks the server why there is no connection): one event-loop timer for the queue and
/// all its copies, never one per call.
///
/// A call adds its deadlines and removes them when it ends: each costs a lock and a dictionary
/// entry. The one timer is scheduled for the earliest deadline; a deadline added later than it
/// (every call's, when all have the same timeout) schedules nothing, so that a busy queue's calls
/// never wake the event loop to arm a timer. When the timer fires it runs the deadlines that
/// are due (outside the lock) and is scheduled again for the earliest one left, so it fires at
/// most once per timeout while calls keep ending in time.
///
/// The timer holds the instance weakly: a pending timer never keeps it alive.
final class CallTimers: Sendable {
  /// A deadline's handle, to remove it.
  struct Token: Sendable, Hashable {
    fileprivate let id: UInt64
  }

  private struct Entry {
    var deadline: NIODeadline
    var action: @Sendable () -> Void
  }

  private struct State {
    var entries: [UInt64: Entry] = [:]
    var nextID: UInt64 = 0
    /// The event-loop timer, the deadline it fires at and its number; nil when none is
    /// scheduled.
    var timer: (deadline: NIODeadline, scheduled: Scheduled<Void>, number: UInt64)?
    var timersScheduled: UInt64 = 0
  }

  private let state = Locked(State())
  private let loop: any EventLoop

  /// `loop` runs the timer (and the deadlines' actions, which must not block).
  init(loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) {
    self.loop = loop
  }

  /// Runs `action` at `deadline` (on the timer's event loop), unless it is removed before.
  func add(at deadline: NIODeadline, _ action: @escaping @Sendable () -> Void) -> Token {
    state.withLock { state in
      let id = state.nextID
      state.nextID += 1
      state.entries[id] = Entry(deadline: deadline, action: action)
      if let timer = state.timer, timer.deadline <= deadline { return Token(id: id) }
      state.timer?.scheduled.cancel()
      schedule(at: deadline, &state)
      return Token(id: id)
    }
  }

  /// Forgets a deadline; its action will not run (unless it is running already).
  func remove(_ token: Token) {
    state.withLock { _ = $0.entries.removeValue(forKey: token.id) }
  }

  /// How many deadlines are pending (for the tests).
  var pending: Int { state.withLock { $0.entries.count } }

  /// Whether the one timer is scheduled (for the tests).
  var isScheduled: Bool { state.withLock { $0.timer != nil } }

  /// How many times an event-loop timer was scheduled since `init` (for the tests).
  var timersScheduled: UInt64 { state.withLock { $0.timersScheduled } }

  private func schedule(at deadline: NIODeadline, _ state: inout State) {
    state.timersScheduled += 1
    let number = state.timersScheduled
    let scheduled = loop.scheduleTask(deadline: deadline) { [weak self] () -> Void in
      self?.fire(number)
    }
    state.timer = (deadline, scheduled, number)
  }

  /// Runs the due deadlines. Only the current timer schedules the next one: a timer replaced
  /// by an earlier one, which fired before its cancellation took hold, runs what is due and
  /// leaves the schedule to the current one.
  private func fire(_ number: UInt64) {
    let now = NIODeadline.now()
    let due = state.withLock { state -> [@Sendable () -> Void] in
      var due: [@Sendable () -> Void] = []
      var earliest: NIODeadline?
      for (id, entry) in state.entries {
        if entry.deadline <= now {
          due.append(entry.action)
          state.entries[id] = nil
        } else if earliest.map({ entry.deadline < $0 }) ?? true {
          earliest = entry.deadline
        }
      }
      if state.timer?.number == number {
        state.timer = nil
        if let earliest { schedule(at: earliest, &state) }
      }
      return due
    }
    for action in due { action() }
  }
}
