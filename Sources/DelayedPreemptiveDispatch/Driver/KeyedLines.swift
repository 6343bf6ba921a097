/// The lines of a keyed instance: a line per key that holds state (a pending burst, a decided
/// run or a running one), in a ``KeyTable``, and their timers in one ``TimerHeap``.
///
/// A key's line is dropped as soon as it is idle. Its heap entry, if any, stays until it is
/// due, as a stale entry that the machine ignores; when stale entries make up most of a large
/// heap, the heap is compacted, and once no key holds state the heap goes too (an array keeps
/// its capacity when emptied, and a million keys that have all fired must not keep it).
@usableFromInline
struct KeyedLines<Key: Hashable & Sendable, Work: Sendable>: BurstLines {
  @usableFromInline typealias LineID = Key

  @usableFromInline var keys = KeyTable<Key, BurstLine<Work>>()
  @usableFromInline var heap = TimerHeap<Key>()
  /// Heap entries that no key's live timer is any more.
  @usableFromInline var staleEntries = 0

  @inlinable static var dropsIdleLines: Bool { true }

  @inlinable init() {}

  @inlinable var count: Int { keys.count }

  @inlinable
  func position(of id: Key) -> Int? {
    keys.position(of: id)
  }

  @inlinable
  subscript(at position: Int) -> BurstLine<Work> {
    get { keys[at: position] }
    _modify { yield &keys[at: position] }
  }

  @inlinable
  mutating func insert(_ line: BurstLine<Work>, for id: Key) -> Int {
    keys.insert(line, for: id)
  }

  @inlinable
  mutating func remove(_ id: Key) {
    guard let line = keys.removeValue(forKey: id) else { return }
    if line.liveTimerGeneration != nil { staleEntries += 1 }
    if keys.count == 0 {
      // With no key left, every heap entry is stale.
      heap = TimerHeap()
      staleEntries = 0
    } else if staleEntries > 1_024, staleEntries * 2 > heap.count {
      heap.compact { entry in keys[entry.key]?.awaitsTimer(entry.generation) ?? false }
      staleEntries = 0
    }
  }

  @inlinable
  func pendingIDs() -> [Key] {
    keys.keys { $0.isPending }
  }

  /// A key's line forgets its value when its burst ends, and is dropped once idle: nothing to
  /// forget here.
  @inlinable
  mutating func forgetAllWork() {}

  @inlinable
  mutating func staleTimerHandedOut() {
    staleEntries = max(staleEntries - 1, 0)
  }

  @inlinable
  mutating func schedule(_ timer: TimerRequest, for id: Key) {
    heap.insert(TimerHeap.Entry(deadline: timer.deadline, generation: timer.generation, key: id))
  }

  @inlinable
  mutating func scheduleGate(_ timer: TimerRequest, for id: Key) {
    schedule(timer, for: id)
  }

  @inlinable
  mutating func timerReplaced() {
    staleEntries += 1
  }

  @inlinable
  mutating func popDue(by now: TimelineInstant) -> (id: Key, generation: UInt64)? {
    guard let entry = heap.popDue(by: now) else { return nil }
    return (entry.key, entry.generation)
  }

  @inlinable var earliestDeadline: TimelineInstant? { heap.first?.deadline }

  @inlinable var scheduledCount: Int { heap.count }
}
