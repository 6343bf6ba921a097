/// The timers of a keyed instance, earliest first: a binary min-heap of (deadline, generation,
/// key) with lazy deletion. A timer that is no longer its key's live one stays in the heap until
/// it is popped (or a compaction drops it) and is then a no-op by generation, so re-arming or
/// cancelling a key never searches the heap.
@usableFromInline
struct TimerHeap<Key: Sendable>: Sendable {
  @usableFromInline
  struct Entry: Sendable {
    @usableFromInline var deadline: TimelineInstant
    @usableFromInline var generation: UInt64
    @usableFromInline var key: Key

    @inlinable
    init(deadline: TimelineInstant, generation: UInt64, key: Key) {
      self.deadline = deadline
      self.generation = generation
      self.key = key
    }
  }

  @usableFromInline var entries: [Entry] = []

  @inlinable init() {}

  @inlinable var count: Int { entries.count }
  @inlinable var first: Entry? { entries.first }

  @inlinable
  mutating func insert(_ entry: Entry) {
    entries.append(entry)
    siftUp(entries.count - 1)
  }

  /// Removes and returns the earliest entry if it is due by `now`.
  @inlinable
  mutating func popDue(by now: TimelineInstant) -> Entry? {
    guard let first = entries.first, first.deadline <= now else { return nil }
    let last = entries.removeLast()
    if !entries.isEmpty {
      entries[0] = last
      siftDown(0)
    }
    return first
  }

  /// Keeps only the entries `isLive` accepts, in O(n).
  @inlinable
  mutating func compact(keeping isLive: (Entry) -> Bool) {
    entries.removeAll { !isLive($0) }
    if entries.capacity > 4 * max(entries.count, 16) { entries = Array(entries) }
    for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
  }

  @inlinable
  static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
    (lhs.deadline.nanoseconds, lhs.generation) < (rhs.deadline.nanoseconds, rhs.generation)
  }

  @inlinable
  mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard Self.precedes(entries[child], entries[parent]) else { return }
      entries.swapAt(child, parent)
      child = parent
    }
  }

  @inlinable
  mutating func siftDown(_ start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      guard left < entries.count else { return }
      var smallest = left
      if left + 1 < entries.count, Self.precedes(entries[left + 1], entries[left]) {
        smallest = left + 1
      }
      guard Self.precedes(entries[smallest], entries[parent]) else { return }
      entries.swapAt(smallest, parent)
      parent = smallest
    }
  }
}
