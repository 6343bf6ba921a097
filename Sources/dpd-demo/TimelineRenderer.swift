import DelayedPreemptiveDispatch

/// Draws a ``Timeline`` as text: a time axis, one row per submission from its submission to its
/// outcome, a row of inputs, a row of fired tasks and a row of adapter callbacks, then the
/// chronological event log.
struct TimelineRenderer {
  let style: Style
  /// Columns of the time axis.
  var width = 60
  /// Columns of the row labels.
  var labelWidth = 16

  private struct Cell {
    var glyph: Character
    var paint: Style.Paint?
  }

  func render(_ timeline: Timeline) -> [String] {
    let submissions = timeline.submissions
    let events = timeline.events
    let last = ([Duration.zero] + events.map(\.at) + submissions.compactMap(\.resolvedAt)).max()!
    let span = roundedUp(last)
    var lines = axis(span: span)
    for submission in submissions {
      lines.append(row(for: submission, span: span))
    }
    lines.append(
      markRow("inputs", events, span: span) { kind in
        if case .input = kind { return ("^", nil) }
        return nil
      })
    lines.append(
      markRow("task fired", events, span: span) { kind in
        if case .fired = kind { return ("*", .green) }
        return nil
      })
    let adapterMark: (Timeline.Event.Kind) -> (Character, Style.Paint?)? = { kind in
      if case .adapter(let mark) = kind { return (mark, .cyan) }
      return nil
    }
    // A scenario with no adapter (reindex) gets no adapter row.
    if events.contains(where: { adapterMark($0.kind) != nil }) {
      lines.append(markRow("adapter", events, span: span, mark: adapterMark))
    }
    lines.append("")
    lines.append(style.bold("events"))
    for event in events {
      lines.append("  " + pad(seconds(event.at), 8) + describe(event))
    }
    return lines
  }

  private func axis(span: Duration) -> [String] {
    var labels = Array(repeating: Character(" "), count: width + 8)
    var ruler = Array(repeating: Character("-"), count: width + 1)
    var tick = Duration.zero
    while tick <= span {
      let column = self.column(tick, span: span)
      let whole = tick / .seconds(1) == (tick / .seconds(1)).rounded()
      ruler[column] = whole ? "|" : ":"
      if whole {
        for (offset, glyph) in "\(Int(tick / .seconds(1)))s".enumerated() {
          labels[column + offset] = glyph
        }
      }
      tick += .milliseconds(500)
    }
    let indent = String(repeating: " ", count: labelWidth)
    while labels.last == " " { labels.removeLast() }
    return [style.dim(indent + String(labels)), style.dim(indent + String(ruler))]
  }

  private func row(for submission: Timeline.Submission, span: Duration) -> String {
    var cells = Array(repeating: Cell(glyph: " "), count: width + 1)
    let first = column(submission.at, span: span)
    let end = column(submission.resolvedAt ?? span, span: span)
    if first + 1 < end {
      for index in (first + 1)..<end { cells[index] = Cell(glyph: "-", paint: .dim) }
    }
    cells[first] = Cell(glyph: "o")
    let outcome: String
    switch submission.outcome {
    case .executed?:
      cells[end] = Cell(glyph: "*", paint: .green)
      outcome = style.green("executed ")
    case .preempted?:
      cells[end] = Cell(glyph: "x", paint: .yellow)
      outcome = style.yellow("preempted")
    case .cancelled?:
      cells[end] = Cell(glyph: "c", paint: .red)
      outcome = style.red("cancelled")
    case nil:
      outcome = "pending  "
    }
    let at = submission.resolvedAt.map { " at " + seconds($0) } ?? ""
    return pad("#\(submission.id) \(submission.label)", labelWidth) + draw(cells) + "  "
      + outcome + at
  }

  private func markRow(
    _ label: String, _ events: [Timeline.Event], span: Duration,
    mark: (Timeline.Event.Kind) -> (Character, Style.Paint?)?
  ) -> String {
    var cells = Array(repeating: Cell(glyph: " "), count: width + 1)
    for event in events {
      guard let (glyph, paint) = mark(event.kind) else { continue }
      cells[column(event.at, span: span)] = Cell(glyph: glyph, paint: paint)
    }
    while cells.last?.glyph == " " { cells.removeLast() }
    return style.dim(pad(label, labelWidth)) + draw(cells)
  }

  private func describe(_ event: Timeline.Event) -> String {
    switch event.kind {
    case .input: return event.text
    case .dispatch: return style.dim(event.text)
    case .fired: return style.green(event.text)
    case .adapter: return style.cyan("adapter: " + event.text)
    }
  }

  /// Draws the cells, one colour sequence per run of cells with the same paint.
  private func draw(_ cells: [Cell]) -> String {
    var text = ""
    var index = cells.startIndex
    while index < cells.endIndex {
      let paint = cells[index].paint
      var end = index
      while end < cells.endIndex, cells[end].paint == paint { end += 1 }
      let run = String(cells[index..<end].map(\.glyph))
      text += paint.map { style.paint(run, $0) } ?? run
      index = end
    }
    return text
  }

  private func column(_ time: Duration, span: Duration) -> Int {
    let fraction = max(0, min(1, time / span))
    return Int((fraction * Double(width)).rounded())
  }

  private func roundedUp(_ time: Duration) -> Duration {
    let halves = (time / .milliseconds(500)).rounded(.up)
    return .milliseconds(500) * max(Int(halves), 1)
  }

  private func pad(_ text: String, _ count: Int) -> String {
    let clipped = text.count < count ? text : String(text.prefix(count - 1))
    return clipped + String(repeating: " ", count: count - clipped.count)
  }
}
