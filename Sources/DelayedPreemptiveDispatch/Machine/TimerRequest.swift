/// A timer a driver must arm: report it fired, with its generation, once `deadline` is reached.
@usableFromInline
struct TimerRequest: Equatable, Sendable {
  @usableFromInline var deadline: TimelineInstant
  @usableFromInline var generation: UInt64

  @inlinable
  init(deadline: TimelineInstant, generation: UInt64) {
    self.deadline = deadline
    self.generation = generation
  }
}
