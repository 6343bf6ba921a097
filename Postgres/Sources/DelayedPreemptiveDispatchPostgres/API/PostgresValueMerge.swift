/// How the submissions of a burst make the value that its handler gets, for a
/// ``PostgresDelayedPreemptiveQueue``.
///
/// ```swift
/// // Every edit of a document, in order, in one reindex per quiet period, on any replica:
/// let reindex = PostgresDelayedPreemptiveQueue<[Edit]>(
///   client: client, name: "reindex", options: DelayOptions(maxWait: .seconds(30)),
///   merge: .append)
/// try await reindex.delay(document.id, for: .seconds(2), value: [edit])
/// ```
public enum PostgresValueMerge: Sendable, Hashable {
  /// The last submission's value wins: a burst's handler gets the value of its last
  /// submission. The default.
  case replace
  /// Each value encodes as a JSON array; a burst's handler gets the concatenation of its
  /// submissions' arrays, in submission order. A submission whose value does not encode as a
  /// JSON array throws ``PostgresDelayedPreemptiveQueueError/valueNotEncodable(key:reason:)``
  /// and joins no burst.
  case append
}
