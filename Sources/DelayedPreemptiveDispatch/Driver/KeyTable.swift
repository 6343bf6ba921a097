/// The per-key states of a keyed driver: a dictionary from each key to a slot number, and the
/// states themselves side by side in one array whose free slots are reused.
///
/// A `Dictionary` keeps up to twice as many buckets as entries, each as wide as its value; with
/// a state of about 90 bytes per key that doubles the memory of a million pending keys. Here
/// the buckets hold a 4-byte slot number, and the states sit densely. When the last key leaves,
/// every buffer is released, so an instance that has drained holds no memory for its keys.
@usableFromInline
struct KeyTable<Key: Hashable, Value> {
  @usableFromInline var slots: [Key: Int32] = [:]
  @usableFromInline var values: [Value?] = []
  @usableFromInline var freeSlots: [Int32] = []

  @inlinable
  init() {}

  @inlinable var count: Int { slots.count }

  /// Where `key`'s state is, for repeated access without hashing again.
  @inlinable
  func position(of key: Key) -> Int? {
    slots[key].map { Int($0) }
  }

  /// The state at `position`, read or changed in place.
  @inlinable
  subscript(at position: Int) -> Value {
    get { values[position]! }
    _modify { yield &values[position]! }
  }

  /// The state of `key`, changed in place; setting `nil` removes it.
  @inlinable
  subscript(key: Key) -> Value? {
    get { slots[key].flatMap { values[Int($0)] } }
    _modify {
      if let slot = slots[key] {
        yield &values[Int(slot)]
        if values[Int(slot)] == nil { removeValue(forKey: key) }
      } else {
        var value: Value?
        yield &value
        if let value { insert(value, for: key) }
      }
    }
  }

  /// Stores the state of a key that has none, and returns its position.
  @inlinable
  @discardableResult
  mutating func insert(_ value: Value, for key: Key) -> Int {
    let slot: Int32
    if let free = freeSlots.popLast() {
      slot = free
      values[Int(slot)] = value
    } else {
      precondition(values.count < Int32.max, "Internal inconsistency: too many keys")
      slot = Int32(values.count)
      values.append(value)
    }
    slots[key] = slot
    return Int(slot)
  }

  @inlinable
  @discardableResult
  mutating func removeValue(forKey key: Key) -> Value? {
    guard let slot = slots.removeValue(forKey: key) else { return nil }
    let value = values[Int(slot)].take()
    if slots.isEmpty {
      slots = [:]
      values = []
      freeSlots = []
    } else {
      freeSlots.append(slot)
    }
    return value
  }

  /// The keys whose state `isIncluded` accepts, in no particular order.
  @inlinable
  func keys(where isIncluded: (Value) -> Bool) -> [Key] {
    slots.compactMap { isIncluded(values[Int($0.value)]!) ? $0.key : nil }
  }
}

extension KeyTable: Sendable where Key: Sendable, Value: Sendable {}
