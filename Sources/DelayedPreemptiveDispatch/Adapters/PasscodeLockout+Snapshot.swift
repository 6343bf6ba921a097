#if canImport(FoundationEssentials)
  import FoundationEssentials  // Date
#else
  import Foundation  // Date
#endif

extension PasscodeLockout {
  /// The state of a lockout with its deadlines on the wall clock and a monotonic reference, to
  /// save and restore so that a relaunch of the app or service does not end a lockout or forget
  /// the failures.
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
    /// The boot session and uptime when the snapshot was taken; `nil` in snapshots saved by
    /// earlier versions, or where the platform does not tell them.
    public var reference: MonotonicReference?
    /// How long the count still had until it returned to 0, when the snapshot was taken.
    public var countResetsIn: Duration?
    /// How long the lockout still had, when the snapshot was taken.
    public var lockedOutFor: Duration?

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

  /// The current state with its deadlines on the wall clock, read at `now`, and the system's
  /// ``MonotonicReference``.
  ///
  /// Nothing pending changes. Pass `now` only to control the wall clock in tests.
  public func snapshot(now: Date = Date()) -> Snapshot {
    snapshot(now: now, reference: .current)
  }

  /// The current state, as ``snapshot(now:)``, with `reference` as the monotonic reading; for
  /// tests that play a relaunch or a reboot.
  public func snapshot(now: Date, reference: MonotonicReference?) -> Snapshot {
    core.update { rules, reading in
      let instant = rules.timer.observe(reading)
      func wallClock(_ deadline: Duration?) -> Date? {
        deadline.map { now.addingTimeInterval(Self.seconds($0 - instant)) }
      }
      var snapshot = Snapshot(
        failures: rules.failures, countResetsAt: wallClock(rules.windowEnd),
        lockedOutUntil: wallClock(rules.lockoutEnd), lockouts: rules.lockouts)
      snapshot.reference = reference
      snapshot.countResetsIn = rules.windowEnd.map { max($0 - instant, .zero) }
      snapshot.lockedOutFor = rules.lockoutEnd.map { max($0 - instant, .zero) }
      return snapshot
    }
  }

  /// Replaces the current state with `snapshot`, measuring the time since it was taken on the
  /// system's monotonic reference, or on the wall clock at `now` for an older snapshot.
  ///
  /// A lockout that has not ended goes on for the time it has left; one that has ended opens
  /// with no failures. Failures whose window has not passed stay counted for the rest of it. The
  /// pending timer is replaced, and `onChange` reports the restored state if it differs from the
  /// current one.
  ///
  /// How the time left is measured (the threat model is a user who can set the wall clock):
  /// - Same boot session as the snapshot: from the uptime, which the user cannot set. Setting
  ///   the wall clock forward does not shorten a lockout or a window.
  /// - Another boot session: the time left when the snapshot was taken, in full. Time spent
  ///   switched off does not count, and the wall clock cannot shorten it.
  /// - A snapshot with no monotonic reference (saved by an earlier version): the wall clock at
  ///   `now`.
  ///
  /// In every case the time left is capped at one full window and one full lockout of the
  /// restored escalation step, so setting the wall clock back cannot lengthen them either.
  public func restore(_ snapshot: Snapshot, now: Date = Date()) {
    restore(snapshot, now: now, reference: .current)
  }

  /// Replaces the current state with `snapshot`, as ``restore(_:now:)``, with `reference` as the
  /// monotonic reading; for tests that play a relaunch or a reboot.
  public func restore(_ snapshot: Snapshot, now: Date, reference: MonotonicReference?) {
    let elapsed = Self.elapsed(since: snapshot, now: now, reference: reference)
    core.update { rules, reading in rules.restore(snapshot, elapsed: elapsed, at: reading) }
  }

  /// How to measure the time left of each deadline of `snapshot`, by the rules of
  /// ``restore(_:now:)``.
  static func elapsed(
    since snapshot: Snapshot, now: Date, reference: MonotonicReference?
  ) -> LockoutRules.Elapsed {
    guard let saved = snapshot.reference else {
      return .wallClock(seconds: now.timeIntervalSinceReferenceDate)
    }
    if let reference, reference.bootSessionID == saved.bootSessionID,
      reference.uptime >= saved.uptime
    {
      return .uptime(reference.uptime - saved.uptime)
    }
    return .uptime(.zero)
  }

  /// `duration` in seconds; a division of durations, which, unlike `components`, never traps
  /// for a duration beyond `Int64.max` seconds.
  private static func seconds(_ duration: Duration) -> Double {
    duration / .seconds(1)
  }
}
