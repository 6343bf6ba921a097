/// A first-in, first-out queue that reuses its storage: amortised O(1) at both ends. The
/// driver keeps the decided runs of each line, and the lines ready to run, in these.
@usableFromInline
struct FIFO<Element> {
  @usableFromInline var elements: [Element?] = []
  @usableFromInline var head = 0

  @inlinable
  init() {}

  @inlinable var isEmpty: Bool { head == elements.count }
  @inlinable var count: Int { elements.count - head }

  @inlinable
  mutating func append(_ element: Element) {
    elements.append(element)
  }

  /// The oldest element, if any.
  @inlinable var first: Element? { head < elements.count ? elements[head] : nil }

  /// Whether an element satisfies `predicate`.
  @inlinable
  func contains(where predicate: (Element) -> Bool) -> Bool {
    elements[head...].contains { $0.map(predicate) ?? false }
  }

  /// Changes every element in place, oldest first.
  @inlinable
  mutating func modifyAll(_ change: (inout Element) -> Void) {
    for index in head..<elements.count { change(&elements[index]!) }
  }

  @inlinable
  mutating func popFirst() -> Element? {
    guard head < elements.count else { return nil }
    let element = elements[head].take()
    head += 1
    if head == elements.count {
      // Drained: keep a small buffer for reuse, give a large one back.
      elements.removeAll(keepingCapacity: elements.capacity <= 64)
      head = 0
    } else if head >= 64, head * 2 >= elements.count {
      elements = Array(elements[head...])
      head = 0
    }
    return element
  }
}

extension FIFO: Sendable where Element: Sendable {}
