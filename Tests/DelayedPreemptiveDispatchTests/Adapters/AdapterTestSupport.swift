import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// Collects values from any thread, in the order they arrive.
final class Recorder<Value: Sendable>: Sendable {
  private let values = LockBox<[Value]>([])

  func append(_ value: Value) {
    values.withLock { $0.append(value) }
  }

  var all: [Value] {
    values.withLock { $0 }
  }
}

/// A serial callback queue that a test can drain, so that every callback enqueued so far has run.
struct CallbackDrain: Sendable {
  let queue = DispatchQueue(label: "AdapterTests.callbacks")

  func drain() async {
    await withCheckedContinuation { continuation in
      queue.async { continuation.resume() }
    }
  }
}
