import DelayedPreemptiveDispatch

/// The part of the library a scenario drives: the GCD queue or the actor, behind one face.
protocol Backend: Sendable {
  /// Says what runs the tasks, for the scenario's header.
  var name: String { get }
  /// Says where a fired task ran, for the event log.
  var runsOn: String { get }
  func delay(_ duration: Duration, task: @escaping @Sendable () -> Void) async -> DelayTicket
  func cancel() async
}

/// `DelayedPreemptiveDispatchQueue`: tasks run on its serial dispatch queue.
struct QueueBackend: Backend {
  let queue: DelayedPreemptiveDispatchQueue
  let label: String

  init(label: String, options: DelayOptions) {
    self.label = label
    queue = DelayedPreemptiveDispatchQueue(label: label, options: options)
  }

  var name: String { "GCD queue (DelayedPreemptiveDispatchQueue \"\(label)\")" }
  var runsOn: String { "on the GCD queue \"\(label)\"" }

  func delay(_ duration: Duration, task: @escaping @Sendable () -> Void) async -> DelayTicket {
    queue.delay(for: duration, task: task)
  }

  func cancel() async {
    queue.cancel()
  }
}

/// `DelayedPreemptiveActor` on `ContinuousClock`: tasks run in a task the actor starts.
struct ActorBackend: Backend {
  let actor: DelayedPreemptiveActor<ContinuousClock>

  init(options: DelayOptions) {
    actor = DelayedPreemptiveActor(options: options)
  }

  var name: String { "actor (DelayedPreemptiveActor<ContinuousClock>)" }
  var runsOn: String { "in a task of the actor" }

  func delay(_ duration: Duration, task: @escaping @Sendable () -> Void) async -> DelayTicket {
    await actor.delay(duration) { task() }
  }

  func cancel() async {
    await actor.cancel()
  }
}

extension DemoOptions.Backend {
  /// Makes the backend a scenario plays on.
  func make(label: String, options: DelayOptions) -> any Backend {
    switch self {
    case .gcd: QueueBackend(label: label, options: options)
    case .actor: ActorBackend(options: options)
    }
  }
}
