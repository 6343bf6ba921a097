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
