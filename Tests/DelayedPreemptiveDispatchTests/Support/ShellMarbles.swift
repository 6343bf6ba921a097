import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting

/// Runs marble timelines through a shell (``ShellKind``): the input's elements are calls, the
/// output's elements are the tasks that ran, each drawn at the tick it ran.
///
/// In the input, a letter submits the task of that name (`delay(duration(letter), letter)`),
/// `*` calls `flush()`, `x` calls `cancel()`, and `|` ends the timeline: the pending task, if
/// any, is flushed and `|` is drawn, as a debounced stream does when its base finishes. At each
/// tick the runner first advances the clock to it (a burst due at that tick runs before a call
/// of the same tick), then makes the tick's calls in order. It never sleeps: `advance` returns
/// once the tasks it made due have returned, `flush()` once its task has, and a run started at
/// its submission (a leading one, or one due at once) is awaited through its ticket.
struct ShellMarbles {
  let clock = ManualClock()
  let ran = Recorder<String>()
  let tick: Duration

  init(tick: Duration = .milliseconds(100)) {
    self.tick = tick
  }

  func run(
    _ input: MarbleDiagram, on kind: ShellKind, options: DelayOptions = DelayOptions(),
    delay: (Character) -> Duration
  ) async -> MarbleDiagram {
    let shell = kind.make(clock: clock, options: options, ran: ran)
    let origin = clock.now
    var output: [MarbleDiagram.TimedEvent] = []
    var drawn = 0
    func draw(at tick: Int) {
      let names = ran.all
      for name in names[drawn...] {
        output.append(MarbleDiagram.TimedEvent(tick: tick, event: .element(Character(name))))
      }
      drawn = names.count
    }
    for tick in 0..<input.length {
      if tick > 0 { await clock.advance(to: origin.advanced(by: self.tick * tick)) }
      draw(at: tick)
      for event in input.events(at: tick) {
        switch event {
        case .element("*"):
          await shell.flush()
        case .element("x"):
          await shell.cancel()
        case .element(let name):
          let startsBurst = await !shell.isPending
          let ticket = await shell.delay(delay(name), String(name))
          // A run that started at its submission (leading, or a burst due at once: T5).
          let ranAtOnce = await !shell.isPending
          if (options.leading && startsBurst) || ranAtOnce { _ = await ticket.outcome }
        case .finished, .failed:
          await shell.flush()
          draw(at: tick)
          output.append(MarbleDiagram.TimedEvent(tick: tick, event: .finished))
        }
        draw(at: tick)
      }
    }
    return MarbleDiagram(events: output, length: input.length)
  }

  /// ``run(_:on:options:delay:)`` with the same delay for every submission.
  func run(
    _ input: MarbleDiagram, on kind: ShellKind, options: DelayOptions = DelayOptions(),
    every interval: Duration
  ) async -> MarbleDiagram {
    await run(input, on: kind, options: options) { _ in interval }
  }
}
