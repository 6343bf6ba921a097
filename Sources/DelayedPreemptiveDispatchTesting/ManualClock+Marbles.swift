import DelayedPreemptiveDispatch

extension ManualClock {
  /// Runs the timeline `input` through `debounced(for:options:clock:)` on this clock and
  /// returns the timeline of what the debounced sequence emits.
  ///
  /// Each tick of the diagrams lasts `tick` on this clock. At every tick, the runner first
  /// advances the clock to it (so a burst due at that tick is emitted before an element of
  /// the same tick arrives), then sends that tick's input events one at a time, each once the
  /// debounced sequence has taken the previous one. It moves on only once the consumer has
  /// taken everything due and waits in `next()` again, so every run gives the same result, and
  /// never sleeps. An element emitted at a tick is drawn at that tick; the end of the
  /// sequence, `|` or `^` (any error), too. When the input neither finishes nor throws, the
  /// run ends after its last tick by cancelling the consumer, which draws nothing.
  ///
  /// ```swift
  /// let clock = ManualClock()
  /// let output = await clock.debounce("ab-c---d----|", for: .seconds(3))
  /// #expect(output == "------c---d-|")
  /// ```
  ///
  /// Durations in `options` are on the same clock: with the default `tick` of one second,
  /// `maxWait: .seconds(4)` is four ticks.
  ///
  /// - Precondition: nothing else advances this clock during the run.
  public func debounce(
    _ input: MarbleDiagram, for interval: Duration, options: DelayOptions = DelayOptions(),
    tick tickDuration: Duration = .seconds(1)
  ) async -> MarbleDiagram {
    await run(input, tick: tickDuration) {
      $0.debounced(for: interval, options: options, clock: self).makeAsyncIterator()
    }
  }

  /// Runs the timeline `input` through `throttled(for:latest:clock:)` on this clock and returns
  /// the timeline of what the throttled sequence emits, under the same rules as
  /// ``debounce(_:for:options:tick:)``: the clock is advanced to each tick before that tick's
  /// events are sent, and an element emitted at a tick is drawn at that tick.
  ///
  /// ```swift
  /// let clock = ManualClock()
  /// let output = await clock.throttle("abcdefghijk|", for: .seconds(2))
  /// #expect(output == "a-b-d-f-h-j[k|]")
  /// ```
  ///
  /// - Precondition: nothing else advances this clock during the run.
  public func throttle(
    _ input: MarbleDiagram, for interval: Duration, latest: Bool = true,
    tick tickDuration: Duration = .seconds(1)
  ) async -> MarbleDiagram {
    await run(input, tick: tickDuration) {
      $0.throttled(for: interval, latest: latest, clock: self).makeAsyncIterator()
    }
  }

  /// The one marble runner of every stream operator: `iterate` makes the operator's iterator
  /// over the run's source (the throttled one is the debounced one, over other rules); the run
  /// sends `input` to the source tick by tick and draws what the iterator's storage emits.
  private func run(
    _ input: MarbleDiagram, tick tickDuration: Duration,
    iterating iterate: (MarbleSource) -> AsyncDebouncedSequence<MarbleSource, ManualClock>.Iterator
  ) async -> MarbleDiagram {
    let source = MarbleSource()
    let iterator = iterate(source)
    defer { withExtendedLifetime(iterator) {} }  // the iteration ends when its last iterator goes
    let storage = iterator.storage
    let output = LockBox(MarbleOutput())
    let consumer = Task {
      do {
        while let element = try await storage.next() {
          output.withLock { $0.record(.element(element)) }
        }
        if !Task.isCancelled { output.withLock { $0.record(.finished) } }
      } catch {
        output.withLock { $0.record(.failed) }
      }
    }
    await storage.waitUntilConsumerWaits()
    await source.waitForDemand()
    let origin = now
    var ended = false
    for tick in 0..<input.length where !ended {
      output.withLock { $0.tick = tick }
      if tick > 0 { await advance(to: origin.advanced(by: tickDuration * tick)) }
      await storage.waitUntilConsumerWaits()
      for event in input.events(at: tick) where !ended {
        source.send(event)
        if case .element = event {
          await source.waitForDemand()
          await storage.waitUntilConsumerWaits()
        } else {
          await consumer.value
          ended = true
        }
      }
    }
    if !ended {
      consumer.cancel()
      await consumer.value
    }
    return MarbleDiagram(events: output.withLock { $0.events }, length: input.length)
  }
}

/// What a marble run's consumer recorded, and the tick the runner is at.
private struct MarbleOutput {
  var tick = 0
  var events: [MarbleDiagram.TimedEvent] = []

  mutating func record(_ event: MarbleDiagram.Event) {
    events.append(MarbleDiagram.TimedEvent(tick: tick, event: event))
  }
}
