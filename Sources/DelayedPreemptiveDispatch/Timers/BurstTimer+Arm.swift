extension BurstTimer {
  /// Arms `request` and hands its handle to `install`, which runs under the shell's lock (or in
  /// its isolation) and returns a handle to cancel: the timer it replaced, or its own when it
  /// is no longer the armed one. The one way every shell arms.
  @inlinable
  func arm(
    _ request: TimerRequest, tolerance: Duration?, delivery: TimerDelivery,
    install: (TimerHandle, _ generation: UInt64) -> TimerHandle?
  ) {
    let handle = arm(at: request.deadline, tolerance: tolerance, delivery: delivery)
    install(handle, request.generation)?.cancel()
  }
}
