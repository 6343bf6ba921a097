/// The counters that name submissions and timers. A keyed instance keeps one set for all its
/// keys, so that a timer armed for a key's earlier burst can never pass for a later one's.
@usableFromInline
struct BurstIDs: Sendable {
  @usableFromInline var sequence: UInt64 = 0
  @usableFromInline var generation: UInt64 = 0

  @inlinable
  mutating func nextSequence() -> UInt64 {
    defer { sequence &+= 1 }
    return sequence
  }

  @inlinable
  mutating func nextGeneration() -> UInt64 {
    generation &+= 1
    return generation
  }
}
