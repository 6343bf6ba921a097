import DelayedPreemptiveDispatch
import Dispatch

/// Plays one scenario on real time: sleeps to each scripted instant, submits to the backend,
/// and records every submission's outcome on the ``Timeline``.
final class ScenarioRun: Sendable {
  let timeline = Timeline()
  /// Says what runs the tasks, for the scenario's header.
  let backendName: String
  /// The single-burst backend that ``submit(_:delay:firing:task:)`` uses; `nil` when the
  /// scenario submits to an instance of its own and reports with ``follow(_:_:preemptedBy:)``.
  private let backend: (any Backend)?
  /// Where the adapter's callbacks run, so that the run can wait for them.
  let adapterQueue = DispatchQueue(label: "dpd-demo.adapter-callbacks")
  private let start = ContinuousClock.now
  private let outcomes = LockBox<[Task<Void, Never>]>([])

  init(backend: any Backend) {
    self.backend = backend
    backendName = backend.name
  }

  /// A run whose scenario drives an instance of its own, named `backendName` in the header.
  init(backendName: String) {
    backend = nil
    self.backendName = backendName
  }

  /// Sleeps until `offset` after the start of the scenario.
  func at(_ offset: Duration) async {
    do {
      try await Task.sleep(until: start.advanced(by: offset), clock: .continuous)
    } catch {
      return  // Nothing cancels the demo's tasks; if something did, go on at once.
    }
  }

  /// Submits `task` to run `delay` from now, and follows the outcome of the submission.
  /// `firing` says what the task does, for the event log.
  func submit(
    _ label: String, delay: Duration, firing: String, task: @escaping @Sendable () -> Void
  ) async {
    guard let backend else {
      preconditionFailure("submit(_:delay:firing:task:) needs a run made with a backend")
    }
    let id = timeline.submit(label, delay: delay)
    let runsOn = backend.runsOn
    timeline.log(.dispatch, "#\(id) submitted: delay(\(seconds(delay)))")
    let ticket = await backend.delay(delay) { [timeline] in
      timeline.log(.fired, "#\(id) fired \(runsOn): \(firing)")
      task()
    }
    follow(id, ticket, preemptedBy: "#\(id + 1)")
  }

  /// Follows the outcome of submission `id` (numbered by ``Timeline/submit(_:delay:)``) onto the
  /// timeline; `preemptedBy` names what replaces it, for the event log.
  func follow(_ id: Int, _ ticket: DelayTicket, preemptedBy: String) {
    let follow = Task { [timeline] in
      let outcome = await ticket.outcome
      timeline.resolve(id, outcome)
      switch outcome {
      case .preempted: timeline.log(.dispatch, "#\(id) preempted by \(preemptedBy)")
      case .cancelled: timeline.log(.dispatch, "#\(id) cancelled")
      case .executed: timeline.log(.dispatch, "#\(id) executed: its task has returned")
      }
    }
    outcomes.withLock { $0.append(follow) }
  }

  func cancel(_ reason: String) async {
    guard let backend else { preconditionFailure("cancel(_:) needs a run made with a backend") }
    timeline.log(.dispatch, "cancel(): \(reason)")
    await backend.cancel()
  }

  func input(_ text: String) {
    timeline.log(.input, text)
  }

  /// Records an adapter callback; call it from the adapter's callback queue.
  func adapter(_ mark: Character, _ text: String) {
    timeline.log(.adapter(mark: mark), text)
  }

  /// Waits until every submission has resolved, then until `adapterDone()` holds or
  /// `timeout` passes, so that the adapter's last callback is on the timeline.
  func finish(timeout: Duration = .seconds(2), adapterDone: @Sendable () -> Bool) async {
    for follow in outcomes.withLock({ $0 }) { await follow.value }
    let deadline = ContinuousClock.now + timeout
    while !adapterDone(), ContinuousClock.now < deadline {
      do { try await Task.sleep(for: .milliseconds(10)) } catch { return }
    }
    await withCheckedContinuation { continuation in
      adapterQueue.async { continuation.resume() }
    }
  }
}

/// `duration` in seconds with two decimals, as `0.45 s`.
func seconds(_ duration: Duration) -> String {
  let hundredths = Int((duration / .milliseconds(10)).rounded())
  let fraction = hundredths % 100
  return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) s"
}
