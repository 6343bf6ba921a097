import Foundation

/// The leases one worker holds: for each claim, until when it is surely still held (on this
/// process's monotonic clock, counted from the moment the claim or renewal that confirmed it
/// was sent, so never later than the database's own expiry), and how to cancel its handler.
///
/// A lease is lost when a renewal does not return its claim (another replica took it over),
/// or when its time has passed without a renewal (the database could not be reached, or this
/// process was paused). A lost run's handler is cancelled and its end is not recorded.
final class LeaseBook: Sendable {
  private struct Lease {
    var expiry: ContinuousClock.Instant
    var lost = false
    var cancel: (@Sendable () -> Void)?
  }
  private let leases = Locked<[UUID: Lease]>([:])

  func add(_ claim: UUID, expiry: ContinuousClock.Instant) {
    leases.withLock { $0[claim] = Lease(expiry: expiry) }
  }

  /// Gives the lease the cancellation of its handler; cancels at once if it is already lost.
  ///
  /// Each operation of a run (this one, ``isLostAlone(_:now:)`` and ``remove(_:)``) finds its
  /// lease once, by its index: `leases[claim]?.cancel = cancel` moved the lease out of the
  /// dictionary and back, hashing the claim again, and with the read after it cost about 3,900
  /// instructions a run (`scripts/postgres-worker-instructions.sh`).
  func attach(_ claim: UUID, cancel: @escaping @Sendable () -> Void) {
    let lostAlready = leases.withLock { leases -> Bool in
      guard let index = leases.index(forKey: claim) else { return true }
      leases.values[index].cancel = cancel
      return leases.values[index].lost
    }
    if lostAlready { cancel() }
  }

  /// Forgets the lease; its handler's cancellation (and what that holds: the run's task) is
  /// released after the lock, not under it.
  func remove(_ claim: UUID) {
    _ = leases.withLock { $0.removeValue(forKey: claim) }
  }

  /// Whether the lease is lost (marking it so, and cancelling its handler, if its time passed).
  func isLost(_ claim: UUID, now: ContinuousClock.Instant = .now) -> Bool {
    expire(now: now)
    return leases.withLock { $0[claim]?.lost ?? true }
  }

  /// Whether the lease of `claim` is lost, looking at that lease alone (marking it so if its
  /// time passed): for a claimed row that waits for a free slot, which has no handler to
  /// cancel, without the scan of every lease that ``isLost(_:now:)`` makes.
  func isLostAlone(_ claim: UUID, now: ContinuousClock.Instant = .now) -> Bool {
    leases.withLock { leases in
      guard let index = leases.index(forKey: claim) else { return true }
      if leases.values[index].expiry <= now { leases.values[index].lost = true }
      return leases.values[index].lost
    }
  }

  /// The claims still held, to renew.
  func held() -> [UUID] {
    leases.withLock { $0.filter { !$0.value.lost }.map(\.key) }
  }

  /// Marks as lost every lease whose time has passed, and cancels their handlers. Returns how
  /// many it marked.
  @discardableResult
  func expire(now: ContinuousClock.Instant = .now) -> Int {
    lose { !$1.lost && $1.expiry <= now }
  }

  /// Applies a renewal sent at `sentAt` for `claims`: those in `renewed` hold until
  /// `sentAt + lease`; the others are lost. Returns how many it marked lost.
  @discardableResult
  func renewed(
    _ claims: [UUID], renewed: Set<UUID>, sentAt: ContinuousClock.Instant, lease: Duration
  ) -> Int {
    let sent = Set(claims)
    leases.withLock { leases in
      for claim in renewed where leases[claim]?.lost == false {
        leases[claim]?.expiry = sentAt + lease
      }
    }
    return lose { claim, lease in !lease.lost && sent.contains(claim) && !renewed.contains(claim) }
  }

  private func lose(where condition: (UUID, Lease) -> Bool) -> Int {
    let cancels = leases.withLock { leases -> [(@Sendable () -> Void)?] in
      var cancels: [(@Sendable () -> Void)?] = []
      for (claim, lease) in leases where condition(claim, lease) {
        leases[claim]?.lost = true
        cancels.append(lease.cancel)
      }
      return cancels
    }
    for cancel in cancels { cancel?() }
    return cancels.count
  }
}
