/// Takes the elements out, leaving the array empty: for waiters taken under a lock and resumed
/// outside it.
extension Array {
  /// Returns the elements and leaves the array empty.
  @inlinable
  mutating func take() -> [Element] {
    defer { self = [] }
    return self
  }
}
