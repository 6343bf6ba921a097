/// The rules every burst of an instance shares: its ``DelayOptions``, converted once.
@usableFromInline
struct BurstRules: Sendable {
  @usableFromInline let deadlinePolicy: DeadlinePolicy
  /// `maxWait` in nanoseconds, negative values as zero; `nil` for no bound.
  @usableFromInline let maxWaitNanoseconds: Int64?
  @usableFromInline let leading: Bool
  /// `tolerance` in nanoseconds, with `nil` and negative values as zero.
  @usableFromInline let toleranceNanoseconds: Int64
  /// `tolerance` as given, for the clocks that take one.
  @usableFromInline let tolerance: Duration?
  /// `maxSubmissions`; `nil` for no bound.
  @usableFromInline let maxSubmissions: UInt32?
  /// `minimumSpacing` in nanoseconds; `nil` for none (also for zero).
  @usableFromInline let minimumSpacingNanoseconds: Int64?
  /// Whether a submission that finds its burst already due joins it, and so ends it, instead
  /// of ending it first and starting the next (T7). Only an adapter's timer line
  /// (``AdapterTimer``) asks for it: an event that comes as its round is due belongs to that
  /// round, as the adapters' rules have always said; every public type follows T7.
  @usableFromInline let joinsDueBurst: Bool

  /// - Precondition: `options.maxSubmissions`, when given, is at least 1, and
  ///   `options.minimumSpacing` is not negative.
  @usableFromInline
  init(_ options: DelayOptions, joinsDueBurst: Bool = false) {
    self.joinsDueBurst = joinsDueBurst
    if let maxSubmissions = options.maxSubmissions {
      DelayOptions.requireValid(maxSubmissions: maxSubmissions)
    }
    if let minimumSpacing = options.minimumSpacing {
      DelayOptions.requireValid(minimumSpacing: minimumSpacing)
    }
    minimumSpacingNanoseconds = options.minimumSpacing.map(\.saturatingNanoseconds).flatMap {
      $0 > 0 ? $0 : nil
    }
    self.maxSubmissions = options.maxSubmissions.map { UInt32(clamping: $0) }
    deadlinePolicy = options.deadlinePolicy
    maxWaitNanoseconds = options.maxWait.map { max($0.saturatingNanoseconds, 0) }
    leading = options.leading
    toleranceNanoseconds = max(options.tolerance?.saturatingNanoseconds ?? 0, 0)
    tolerance = options.tolerance
  }
}
