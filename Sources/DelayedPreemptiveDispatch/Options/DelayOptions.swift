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
  /// the pending task runs however often it was preempted, and the next submission starts a new
  /// burst. `nil` (the default) sets no bound; zero or a negative value makes every burst due
  /// at once.
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

  /// Creates options; every parameter has the default described on its property.
  public init(
    deadlinePolicy: DeadlinePolicy = .extend, maxWait: Duration? = nil, leading: Bool = false,
    tolerance: Duration? = nil, maxSubmissions: Int? = nil
  ) {
    if let maxSubmissions { Self.requireValid(maxSubmissions: maxSubmissions) }
    self.deadlinePolicy = deadlinePolicy
    self.maxWait = maxWait
    self.leading = leading
    self.tolerance = tolerance
    self.maxSubmissions = maxSubmissions
  }

  /// Stops with a message naming the parameter when `maxSubmissions` is below 1.
  static func requireValid(maxSubmissions: Int) {
    requireArgument(
      maxSubmissions >= 1,
      "DelayOptions: maxSubmissions must be at least 1 (or nil for no bound), got "
        + "\(maxSubmissions)")
  }
}
