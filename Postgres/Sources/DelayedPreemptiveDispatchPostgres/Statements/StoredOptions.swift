/// A queue's options as `dpd_queues` stores them, and as `dpd_delay` reads them.
struct StoredOptions: Sendable, Hashable, CustomStringConvertible {
  /// `extend` or `restart`.
  var deadlinePolicy: String
  var maxWaitMilliseconds: Double?
  var maxSubmissions: Int?
  /// `replace` or `append`.
  var merge: String
  /// 0 for none.
  var minimumSpacingMilliseconds: Double

  var description: String {
    "deadlinePolicy \(deadlinePolicy), maxWait "
      + (maxWaitMilliseconds.map { "\($0) ms" } ?? "none") + ", maxSubmissions "
      + (maxSubmissions.map { "\($0)" } ?? "none") + ", merge \(merge), minimumSpacing "
      + "\(minimumSpacingMilliseconds) ms"
  }
}
