@_spi(Preconditions) import DelayedPreemptiveDispatch

/// A timeline of a sequence's events drawn as text, one character per tick, as in
/// ``ManualClock/debounce(_:for:options:tick:)`` and the Semantics article's pictures.
///
/// The syntax:
///
/// | text | meaning at its tick |
/// |---|---|
/// | `-` | nothing happens |
/// | a letter, a digit or any other character not listed here | that element |
/// | `\|` | the sequence finishes |
/// | `^` | the sequence throws ``MarbleFailure`` |
/// | `[` … `]` | the events inside, in this order, all at one tick: `[c\|]` |
///
/// Spaces are ignored, so timelines can be aligned. TimelineInstant 0 is the first character.
///
/// ```swift
/// let input: MarbleDiagram = "ab-c---d----|"
/// input.events.first        // MarbleDiagram.TimedEvent(tick: 0, event: .element("a"))
/// input.events.last         // MarbleDiagram.TimedEvent(tick: 12, event: .finished)
/// MarbleDiagram(events: [.init(tick: 2, event: .element("x"))]).text  // "--x"
/// ```
///
/// The diagram knows nothing of streams or clocks: a driver reads ``events`` to feed whatever
/// it tests (a stream, a queue, an actor), records what comes out as ``TimedEvent``s, and
/// compares the diagram built from them with the expected text. Two diagrams are equal when
/// they have the same events at the same ticks and the same ``length``.
public struct MarbleDiagram: Sendable, Hashable, ExpressibleByStringLiteral,
  CustomStringConvertible
{
  /// What happens at a tick.
  public enum Event: Sendable, Hashable {
    /// An element, drawn as its character.
    case element(Character)
    /// The sequence finishes, drawn `|`.
    case finished
    /// The sequence throws, drawn `^`.
    case failed
  }

  /// An event and the tick it happens at.
  public struct TimedEvent: Sendable, Hashable {
    /// The tick, counted from 0.
    public var tick: Int
    /// What happens.
    public var event: Event

    /// Creates `event` at `tick`.
    public init(tick: Int, event: Event) {
      self.tick = tick
      self.event = event
    }
  }

  /// The events in the order they happen: ticks ascending, and in drawing order within a tick.
  public var events: [TimedEvent]
  /// The ticks the diagram spans, the quiet ones after its last event included.
  public var length: Int

  /// Parses `text` (see ``MarbleDiagram`` for the syntax).
  ///
  /// - Precondition: brackets are balanced and not nested, and `-` does not appear inside
  ///   them; the program stops with a message naming the offending character otherwise.
  public init(_ text: String) {
    var events: [TimedEvent] = []
    var tick = 0
    var inGroup = false
    for character in text where character != " " {
      switch character {
      case "[":
        requireArgument(!inGroup, "marble diagram \"\(text)\": nested '[' at tick \(tick)")
        inGroup = true
      case "]":
        requireArgument(inGroup, "marble diagram \"\(text)\": ']' without '[' at tick \(tick)")
        inGroup = false
        tick += 1
      case "-":
        requireArgument(!inGroup, "marble diagram \"\(text)\": '-' inside a group at tick \(tick)")
        tick += 1
      default:
        events.append(TimedEvent(tick: tick, event: Self.event(character)))
        if !inGroup { tick += 1 }
      }
    }
    requireArgument(!inGroup, "marble diagram \"\(text)\": '[' is never closed")
    self.events = events
    length = tick
  }

  /// Parses a string literal; see ``init(_:)``.
  public init(stringLiteral text: String) {
    self.init(text)
  }

  /// A diagram of `events`, which must be in tick order; it spans `length` ticks, or up to its
  /// last event when `length` is `nil` or shorter.
  public init(events: [TimedEvent], length: Int? = nil) {
    self.events = events
    self.length = max(length ?? 0, (events.last?.tick ?? -1) + 1)
  }

  /// The diagram drawn as text: `-` for a quiet tick, one character for a tick with one event,
  /// and `[` … `]` around the events of a tick with several.
  public var text: String {
    var text = ""
    var index = events.startIndex
    for tick in 0..<length {
      var drawn: [Character] = []
      while index < events.endIndex, events[index].tick == tick {
        drawn.append(Self.character(events[index].event))
        index += 1
      }
      switch drawn.count {
      case 0: text.append("-")
      case 1: text.append(drawn[0])
      default: text += "[" + String(drawn) + "]"
      }
    }
    return text
  }

  /// ``text``, so that a failed comparison prints the two timelines.
  public var description: String { text }

  /// The events at `tick`, in drawing order.
  public func events(at tick: Int) -> [Event] {
    events.filter { $0.tick == tick }.map(\.event)
  }

  private static func event(_ character: Character) -> Event {
    switch character {
    case "|": .finished
    case "^": .failed
    default: .element(character)
    }
  }

  private static func character(_ event: Event) -> Character {
    switch event {
    case .element(let character): character
    case .finished: "|"
    case .failed: "^"
    }
  }
}

/// The error a marble timeline's `^` throws.
public struct MarbleFailure: Error, Sendable, Hashable {
  /// Creates the error.
  public init() {}
}
