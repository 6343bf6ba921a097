#if canImport(FoundationEssentials)
  import FoundationEssentials  // Date
#else
  import Foundation  // Date
#endif

extension PasscodeLockout {
  /// The state of a lockout with its deadlines on the wall clock, to save and restore so that a
  /// relaunch of the app or service does not end a lockout or forget the failures.
  ///
  /// ```swift
  /// // When going to the background, or after each change:
  /// defaults.set(try JSONEncoder().encode(lockout.snapshot()), forKey: "lockout")
  /// // At launch:
  /// if let data = defaults.data(forKey: "lockout") {
  ///   lockout.restore(try JSONDecoder().decode(PasscodeLockout.Snapshot.self, from: data))
  /// }
  /// ```
  public struct Snapshot: Codable, Sendable, Hashable {
    /// The failures counted in the current window; 0 while locked out.
    public var failures: Int
    /// When the count returns to 0 if no failure follows; `nil` when nothing is counted.
    public var countResetsAt: Date?
    /// When the current lockout ends; `nil` while open.
    public var lockedOutUntil: Date?
    /// Lockouts since the last success, which picks the next escalation step.
    public var lockouts: Int

    /// Creates a snapshot from its parts; usually you get one from ``PasscodeLockout/snapshot(now:)``.
    public init(failures: Int, countResetsAt: Date?, lockedOutUntil: Date?, lockouts: Int) {
      self.failures = failures
      self.countResetsAt = countResetsAt
      self.lockedOutUntil = lockedOutUntil
      self.lockouts = lockouts
    }

    var countResetsAtSeconds: Double? { countResetsAt?.timeIntervalSinceReferenceDate }
    var lockedOutUntilSeconds: Double? { lockedOutUntil?.timeIntervalSinceReferenceDate }
  }

  /// The current state with its deadlines on the wall clock, read at `now`.
  ///
  /// Nothing pending changes. Pass `now` only to control the wall clock in tests.
  public func snapshot(now: Date = Date()) -> Snapshot {
    withRules { rules, instant in
      func wallClock(_ deadline: Duration?) -> Date? {
        deadline.map { now.addingTimeInterval(Self.seconds($0 - instant)) }
      }
      return Snapshot(
        failures: rules.failures, countResetsAt: wallClock(rules.windowEnd),
        lockedOutUntil: wallClock(rules.lockoutEnd), lockouts: rules.lockouts)
    }
  }

  /// Replaces the current state with `snapshot`, as read on the wall clock at `now`.
  ///
  /// A lockout that has not ended by `now` goes on for the time it has left; one that has ended
  /// opens with no failures. Failures whose window has not passed stay counted for the rest of
  /// it. The pending timer is replaced, and `onChange` reports the restored state if it differs
  /// from the current one. Remaining times are capped at one full window and one full lockout
  /// of the restored escalation step, so setting the wall clock back cannot lengthen them.
  public func restore(_ snapshot: Snapshot, now: Date = Date()) {
    withRules { rules, instant in
      apply(
        rules.restore(snapshot, wallSeconds: now.timeIntervalSinceReferenceDate, at: instant))
    }
  }

  private static func seconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) + Double(attoseconds) * 1e-18
  }
}
