/// The shell that owns a burst: it can bring a record of its current burst up to date.
protocol TicketOwner: AnyObject, Sendable {
  /// Makes `record` know every preemption so far, and report later ones while it has waiters.
  func synchronize(_ record: BurstRecord) async
}
