import AsyncAlgorithms

/// Contender 6: swift-async-algorithms' `debounce(for:)` over an `AsyncStream` of tasks; one
/// consumer task runs each element the debounce lets through. `yield` is synchronous, so any
/// thread can submit.
public final class StreamDebouncer: SyncDebouncer {
  private let continuation: AsyncStream<Work>.Continuation
  private let consumer: Task<Void, Never>

  public init(delay: Duration) {
    let (stream, continuation) = AsyncStream.makeStream(of: Work.self)
    self.continuation = continuation
    consumer = Task {
      for await work in stream.debounce(for: delay) { work() }
    }
  }

  deinit {
    continuation.finish()
  }

  public func submit(_ work: @escaping Work) {
    continuation.yield(work)
  }
}
