import DelayedPreemptiveDispatch

/// The input of a marble run: an async sequence of characters whose events the runner sends
/// one at a time, each only once the reader asks for the next one, so the runner knows when the
/// reader has taken and handled an event.
///
/// One iterator at a time; cancelling the reading task ends it with `nil`.
package struct MarbleSource: AsyncSequence, Sendable {
  package typealias Element = Character

  private struct State {
    /// The reader suspended in `next()`.
    var reader: CheckedContinuation<Character?, any Error>?
    /// Runner waiting for the reader to ask.
    var demandWatcher: CheckedContinuation<Void, Never>?
    /// The reading task was cancelled.
    var cancelled = false
  }

  private let state = LockBox(State())

  /// Returns once the reader is suspended in `next()`, asking for the next event, or the
  /// reading task was cancelled.
  package func waitForDemand() async {
    await withCheckedContinuation { (watcher: CheckedContinuation<Void, Never>) in
      let ready = state.withLock { state in
        guard state.reader == nil, !state.cancelled else { return true }
        state.demandWatcher = watcher
        return false
      }
      if ready { watcher.resume() }
    }
  }

  /// Sends `event` to the reader waiting in `next()`; does nothing once reading was cancelled.
  package func send(_ event: MarbleDiagram.Event) {
    let reader = state.withLock { $0.reader.take() }
    switch event {
    case .element(let character): reader?.resume(returning: character)
    case .finished: reader?.resume(returning: nil)
    case .failed: reader?.resume(throwing: MarbleFailure())
    }
  }

  package init() {}

  package func makeAsyncIterator() -> Iterator {
    Iterator(source: self)
  }

  package struct Iterator: AsyncIteratorProtocol {
    let source: MarbleSource

    package mutating func next() async throws -> Character? {
      try await source.next()
    }
  }

  private func next() async throws -> Character? {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { reader in
        let (ended, watcher) = state.withLock { state in
          if state.cancelled { return (true, CheckedContinuation<Void, Never>?.none) }
          state.reader = reader
          return (false, state.demandWatcher.take())
        }
        if ended { reader.resume(returning: nil) }
        watcher?.resume()
      }
    } onCancel: {
      let (reader, watcher) = state.withLock { state in
        state.cancelled = true
        return (state.reader.take(), state.demandWatcher.take())
      }
      reader?.resume(returning: nil)
      watcher?.resume()
    }
  }
}
