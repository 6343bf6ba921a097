extension Worker {
  /// Renews every held lease once per third of `lease`, in one statement; marks as lost the
  /// leases that a renewal did not return or whose time passed without one. The renewal runs
  /// beside the loop, so that a slow answer does not delay the expiry checks.
  func renewLeases() async {
    let interval = lease / 3
    let outage = Locked(
      Outage(what: "renewing leases", cap: queue.outageBackoff, logger: logger))
    let renewing = Locked(false)
    while true {
      do {
        try await Task.sleep(for: interval)
      } catch {
        return
      }
      leases.expire()
      let claims = leases.held()
      // One renewal at a time: a slow one is not stacked on.
      guard !claims.isEmpty, renewing.withLock({ $0.claimIfFree() }) else { continue }
      let sentAt = ContinuousClock.now
      Task { [queue, leases] in
        defer { renewing.withLock { $0 = false } }
        do {
          let renewed = try await queue.renew(claims)
          leases.renewed(claims, renewed: Set(renewed), sentAt: sentAt, lease: lease)
          outage.withLock { $0.ended() }
        } catch {
          // Not renewed: the leases run out here unless a later renewal gets through.
          _ = outage.withLock { $0.failed(error, defects: metrics) }
        }
      }
    }
  }
}

extension Bool {
  /// Sets a free flag (false) to busy and returns true; returns false if it was busy already.
  fileprivate mutating func claimIfFree() -> Bool {
    if self { return false }
    self = true
    return true
  }
}
