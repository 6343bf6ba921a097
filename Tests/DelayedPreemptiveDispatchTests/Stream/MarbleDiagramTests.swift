import DelayedPreemptiveDispatchTesting
import Testing

/// The marble syntax itself, with no stream: parsing, drawing, and what equality means.
@Suite struct MarbleDiagramTests {
  @Test func parsesOneEventPerTickAndQuietTicks() {
    let diagram = MarbleDiagram("ab-c|")
    #expect(
      diagram.events == [
        .init(tick: 0, event: .element("a")), .init(tick: 1, event: .element("b")),
        .init(tick: 3, event: .element("c")), .init(tick: 4, event: .finished),
      ])
    #expect(diagram.length == 5)
  }

  @Test func groupPutsSeveralEventsOnOneTick() {
    let diagram = MarbleDiagram("-[c^]-")
    #expect(
      diagram.events == [.init(tick: 1, event: .element("c")), .init(tick: 1, event: .failed)])
    #expect(diagram.length == 3)
    #expect(diagram.events(at: 1) == [.element("c"), .failed])
  }

  @Test func spacesAreIgnored() {
    #expect(MarbleDiagram("a b - |") == "ab-|")
  }

  @Test(arguments: ["ab-c---d----|", "------c---d-|", "-[a|]", "---[b^]", "----", "a", ""])
  func drawingGivesBackTheText(_ text: String) {
    #expect(MarbleDiagram(text).text == text)
  }

  @Test func eventsDrawUpToTheirLastTickOrTheGivenLength() {
    let events: [MarbleDiagram.TimedEvent] = [
      .init(tick: 2, event: .element("x")), .init(tick: 2, event: .finished),
    ]
    #expect(MarbleDiagram(events: events).text == "--[x|]")
    #expect(MarbleDiagram(events: events, length: 5).text == "--[x|]--")
    #expect(MarbleDiagram(events: events, length: 1).text == "--[x|]")
  }

  @Test func equalityCountsTrailingQuietTicks() {
    #expect(MarbleDiagram("a--") != MarbleDiagram("a-"))
    #expect(
      MarbleDiagram("a--")
        == MarbleDiagram(events: [.init(tick: 0, event: .element("a"))], length: 3))
  }
}
