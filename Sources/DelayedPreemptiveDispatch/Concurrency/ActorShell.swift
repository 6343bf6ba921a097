/// What the two actors say about their timer: it sleeps on a clock (``ClockTimer``) and
/// delivers in a task that holds the actor weakly. Arming is written once, here, on the one
/// interpreter's ``BurstTimer/arm(_:tolerance:delivery:install:)``.
protocol ActorShell: Actor {
  associatedtype C: Clock where C.Duration == Duration
  var timer: ClockTimer<C> { get }
  var tolerance: Duration? { get }
  /// Keeps the armed timer's handle in the driver, or returns the handle to cancel.
  func install(_ handle: TimerHandle, generation: UInt64) -> TimerHandle?
  /// The timer named `generation` fired.
  func timerFired(generation: UInt64) async
}

extension ActorShell {
  /// Arms `request`, delivering in a task that holds the actor weakly.
  func arm(_ request: TimerRequest) {
    let generation = request.generation
    timer.arm(
      request, tolerance: tolerance,
      delivery: .task { [weak self] in await self?.timerFired(generation: generation) },
      install: { install($0, generation: $1) })
  }
}
