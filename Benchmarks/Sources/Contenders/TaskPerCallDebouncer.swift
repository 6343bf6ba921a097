/// Contender 5, the common Swift-concurrency idiom: an actor that cancels the previous `Task`
/// and starts a new one that sleeps for the delay, then runs the work.
public actor TaskPerCallDebouncer: AsyncDebouncer {
  private let delay: Duration
  private var pending: Task<Void, Never>?

  public init(delay: Duration) {
    self.delay = delay
  }

  public func submit(_ work: @escaping AsyncWork) {
    pending?.cancel()
    pending = Task { [delay] in
      do {
        try await Task.sleep(for: delay)
      } catch {
        return
      }
      await work()
    }
  }
}
