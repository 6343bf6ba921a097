/// Options that shape every burst of a queue or actor.
///
/// ```swift
/// // Run at most every 2 s during a continuous stream, and at once on the first event.
/// let options = DelayOptions(maxWait: .seconds(2), leading: true)
/// ```
public struct DelayOptions: Sendable, Hashable {
  /// How a submission moves the pending deadline. Default ``DeadlinePolicy/extend``.
  public var deadlinePolicy: DeadlinePolicy
  /// The longest a burst may stay pending, counted from its first submission. When it passes,
  /// the burst is due however often it was preempted, and the next submission starts a new
  /// burst. With ``minimumSpacing``, a burst is due at the later of this bound and the previous
  /// run's start plus the spacing, so it can stay pending longer. `nil` (the default) sets no
  /// bound; zero or a negative value makes every burst due at once (subject to the spacing).
  public var maxWait: Duration?
  /// When `true`, the first submission of a burst runs its task at once; the burst then runs
  /// one trailing task at its deadline only if it had at least one more submission.
  /// Default `false`.
  public var leading: Bool
  /// How late the task may run so that timers can be coalesced. Clock-driven timers pass it to
  /// `Clock.sleep(until:tolerance:)`. A `.restart` submission that moves the deadline earlier
  /// by no more than `tolerance` keeps the armed timer instead of arming a new one. `nil` (the
  /// default) means zero for that rule and the clock's own leeway for sleeps; on the real-time
  /// GCD path, `asyncAfter` applies the system's leeway. A negative value counts as zero.
  public var tolerance: Duration?
  /// A burst that has received this many submissions is due at once, as if its deadline had
  /// passed, and the next submission starts a new burst. With ``leading``, the leading
  /// submission counts. `nil` (the default) sets no bound.
  ///
  /// - Precondition: at least 1 when given; the instance that takes the options stops with a
  ///   message naming `maxSubmissions` otherwise.
  public var maxSubmissions: Int?
  /// Throttling: no run starts sooner than this after the start of the previous run (of the
  /// same instance, key or iterator). A burst that would be due sooner becomes due at the
  /// previous run's start plus this spacing, and takes submissions until then under the usual
  /// rules; a `leading` submission runs at once only when no run started within the spacing;
  /// `flush` ignores it, and the spacing of the next run counts from the flushed run's start.
  /// A run *starts* at the instant the burst that decides it ends (its deadline, a flush, or
  /// `maxSubmissions`), on the instance's clock. `nil` (the default) or zero: runs may follow
  /// each other at once. See ``throttle(_:)`` and the article "Throttling".
  ///
  /// - Precondition: not negative; the instance stops with a message naming `minimumSpacing`.
  public var minimumSpacing: Duration?

  /// Creates options; every parameter has the default described on its property.
  public init(
    deadlinePolicy: DeadlinePolicy = .extend, maxWait: Duration? = nil, leading: Bool = false,
    tolerance: Duration? = nil, maxSubmissions: Int? = nil, minimumSpacing: Duration? = nil
  ) {
    if let maxSubmissions { Self.requireValid(maxSubmissions: maxSubmissions) }
    if let minimumSpacing { Self.requireValid(minimumSpacing: minimumSpacing) }
    self.minimumSpacing = minimumSpacing
    self.deadlinePolicy = deadlinePolicy
    self.maxWait = maxWait
    self.leading = leading
    self.tolerance = tolerance
    self.maxSubmissions = maxSubmissions
  }

  /// A throttle: at most one run per `interval`. Used with a zero delay, the first submission
  /// after a quiet interval runs at once, the latest submission of each interval runs at the
  /// interval's end (by the timer, never later), and no two runs start less than `interval`
  /// apart; the spacing always counts from the previous run's start.
  ///
  /// ```swift
  /// let progress = DelayedPreemptiveDispatchQueue(options: .throttle(.seconds(1)))
  /// progress.delay(0) { report(current) }   // at most once a second, the latest state
  /// ```
  ///
  /// The same as `DelayOptions(minimumSpacing: interval)`.
  public static func throttle(_ interval: Duration) -> DelayOptions {
    DelayOptions(minimumSpacing: interval)
  }

  /// Stops with a message naming the parameter when `minimumSpacing` is negative.
  static func requireValid(minimumSpacing: Duration) {
    requireArgument(
      minimumSpacing >= .zero,
      "DelayOptions: minimumSpacing must not be negative (zero or nil for none), got "
        + "\(minimumSpacing)")
  }

  /// Stops with a message naming the parameter when `maxSubmissions` is below 1.
  static func requireValid(maxSubmissions: Int) {
    requireArgument(
      maxSubmissions >= 1,
      "DelayOptions: maxSubmissions must be at least 1 (or nil for no bound), got "
        + "\(maxSubmissions)")
  }
}
