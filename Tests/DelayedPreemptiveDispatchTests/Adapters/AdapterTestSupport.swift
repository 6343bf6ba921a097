import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// A serial callback queue that a test can drain, so that every callback enqueued so far has run.
struct CallbackDrain: Sendable {
  let queue = DispatchQueue(label: "AdapterTests.callbacks")

  func drain() async {
    await withCheckedContinuation { continuation in
      queue.async { continuation.resume() }
    }
  }
}
