import Testing

@testable import DelayedPreemptiveDispatch

/// Programmer errors end the process with a message that names the parameter.
@Suite("Adapter preconditions")
struct AdapterPreconditionTests {
  @Test func passcodeLockoutRejectsMaxFailuresBelowOne() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PasscodeLockout(maxFailures: 0)
    }
    #expect(message(result).contains("maxFailures must be at least 1, got 0"))
  }

  @Test func passcodeLockoutRejectsNonPositiveWindow() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PasscodeLockout(window: .zero)
    }
    #expect(message(result).contains("window must be positive"))
  }

  @Test func passcodeLockoutRejectsNonPositiveLockoutDuration() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PasscodeLockout(lockoutDuration: .seconds(-1))
    }
    #expect(message(result).contains("lockoutDuration must be positive"))
  }

  @Test func passcodeLockoutRejectsEmptyEscalation() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PasscodeLockout(lockoutDurations: [])
    }
    #expect(message(result).contains("lockoutDurations must not be empty"))
  }

  private func message(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
  }
}
