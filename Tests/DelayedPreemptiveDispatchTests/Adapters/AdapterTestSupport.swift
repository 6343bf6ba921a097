import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

/// A serial callback queue that a test can drain, so that every callback enqueued so far has run.
///
/// Only for callbacks that a method call enqueued directly (`recordFailure()`, a stop that settles
/// at once) or checks that nothing was enqueued: `ManualClock.advance(by:)` already returns after
/// the callbacks its timers caused.
struct CallbackDrain: Sendable {
  let queue = DispatchQueue(label: "AdapterTests.callbacks")

  func drain() async {
    await withCheckedContinuation { continuation in
      queue.async { continuation.resume() }
    }
  }
}
