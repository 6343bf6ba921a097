import Dispatch

/// The working part of a ``DelayedPreemptiveDispatchQueue``: the state machine under a lock,
/// the serial queue tasks run on, the `DispatchGroup` that tracks bursts and runs, and the timer.
///
/// Timers capture the core weakly and never the public queue, so a pending timer keeps nothing
/// alive. Every transition happens under the lock; its action (arming, running, resolving
/// tickets) happens after the lock is released.
final class DispatchCore: TicketOwner {
  typealias Work = SyncWork
  typealias Machine = PreemptionStateMachine<Tick, Work>

  private struct State {
    var machine: Machine
    var ledger = TicketLedger()
    var durations = DurationCache()
  }

  /// How far ahead a submission asks to run.
  enum Delay {
    case nanoseconds(Int64)
    /// Converted under the lock, through the cache of the last duration.
    case duration(Duration)
  }

  let queue: DispatchQueue
  /// Entered when a burst starts or a leading task is dispatched; left when that burst has
  /// resolved (after its task returned) or that leading task returned.
  let group = DispatchGroup()
  private let timer: any QueueTimer
  private let tolerance: Duration?
  private let state: LockBox<State>

  init(
    queue: DispatchQueue, timer: any QueueTimer, options: DelayOptions,
    work: (@Sendable () -> Void)?
  ) {
    self.queue = queue
    self.timer = timer
    tolerance = options.tolerance
    state = LockBox(State(machine: Machine(options: options, work: work.map(SyncWork.init))))
  }

  var isPending: Bool { state.withLock { $0.machine.isPending } }

  func delay(_ delay: Delay, work: (@Sendable () -> Void)?) -> DelayTicket {
    let now = timer.now()
    let (ticket, request, leading) = state.withLock {
      state -> (DelayTicket, Machine.TimerRequest?, (Work, BurstRecord)?) in
      let requested: Tick
      switch delay {
      case .nanoseconds(let nanoseconds): requested = now.advanced(byNanoseconds: nanoseconds)
      case .duration(let duration):
        requested = now.advanced(byNanoseconds: state.durations.nanoseconds(of: duration))
      }
      switch state.machine.delay(at: now, until: requested, work: work.map(SyncWork.init)) {
      case .rejected:
        return (DelayTicket(resolved: .cancelled), nil, nil)
      case .joined(let seq, _, let request):
        return (state.ledger.join(seq: seq), request, nil)
      case .started(let seq, let request, let leading):
        group.enter()
        let ticket = state.ledger.begin(seq: seq, leading: leading != nil, owner: self)
        guard let leading, let record = state.ledger.current else { return (ticket, request, nil) }
        group.enter()
        return (ticket, request, (leading, record))
      }
    }
    if let request { arm(request) }
    if let (work, record) = leading {
      queue.async { [group] in
        work.run()
        record.finishLeading()
        group.leave()
      }
    }
    return ticket
  }

  func flush() {
    let (action, record) = state.withLock { state -> (Machine.FlushAction, BurstRecord?) in
      let action = state.machine.flush()
      if case .idle = action { return (action, nil) }
      return (action, state.ledger.end())
    }
    switch action {
    case .idle:
      return
    case .end(let end):
      record?.close(lastSeq: end.lastSeq)
      group.leave()
    case .run(let work, let end):
      record?.close(lastSeq: end.lastSeq)
      queue.async { [group] in
        work.run()
        record?.finish(.executed)
        group.leave()
      }
    }
  }

  func cancel() {
    resolveCancelled(
      state.withLock { state in
        state.machine.cancel().map { ($0, state.ledger.end()) }
      })
  }

  /// Cancels the pending burst and drops the task: the public queue is going away.
  func release() {
    resolveCancelled(
      state.withLock { state in
        state.machine.release().map { ($0, state.ledger.end()) }
      })
  }

  private func resolveCancelled(_ ended: (Machine.BurstEnd, BurstRecord)?) {
    guard let (end, record) = ended else { return }
    record.close(lastSeq: end.lastSeq)
    record.finish(.cancelled)
    group.leave()
  }

  /// Runs on `queue` when the timer named `generation` fires.
  private func timerFired(generation: UInt64) {
    let now = timer.now()
    let (action, record) = state.withLock { state -> (Machine.FireAction, BurstRecord?) in
      let action = state.machine.timerFired(at: now, generation: generation)
      switch action {
      case .stale, .rearm: return (action, nil)
      case .run, .end: return (action, state.ledger.end())
      }
    }
    switch action {
    case .stale:
      return
    case .rearm(let request):
      arm(request)
    case .end(let end):
      record?.close(lastSeq: end.lastSeq)
      group.leave()
    case .run(let work, let end):
      record?.close(lastSeq: end.lastSeq)
      work.run()
      record?.finish(.executed)
      group.leave()
    }
  }

  private func arm(_ request: Machine.TimerRequest) {
    let generation = request.generation
    timer.arm(at: request.deadline, tolerance: tolerance, on: queue) { [weak self] in
      self?.timerFired(generation: generation)
    }
  }

  func synchronize(_ record: BurstRecord) async {
    state.withLock { state in
      state.ledger.synchronize(record, lastSeq: state.machine.burst?.lastSeq)
    }
  }
}
