import DelayedPreemptiveDispatchTesting
import Dispatch
import Testing

@testable import DelayedPreemptiveDispatch

@Suite("PasscodeLockout under concurrency")
struct PasscodeLockoutConcurrencyTests {
  @Test func eightThreadsLockOutOnceAndReportEachStateOnceInOrder() async {
    let clock = ManualClock()
    let drain = CallbackDrain()
    let changes = Recorder<PasscodeLockout.State>()
    let lockout = PasscodeLockout(
      maxFailures: 5, lockoutDuration: .seconds(30), clock: clock, callbackQueue: drain.queue
    ) { changes.append($0) }
    let expected: [PasscodeLockout.State] = [
      .open(failures: 1), .open(failures: 2), .open(failures: 3), .open(failures: 4), .lockedOut,
      .open(failures: 0),
    ]
    for round in 1...3 {
      let returned = Recorder<PasscodeLockout.State>()
      DispatchQueue.concurrentPerform(iterations: 8) { _ in
        for _ in 0..<50 { returned.append(lockout.recordFailure()) }
      }
      let counts = returned.all.reduce(into: [PasscodeLockout.State: Int]()) {
        $0[$1, default: 0] += 1
      }
      #expect(returned.all.count == 400)
      for failures in 1...4 { #expect(counts[.open(failures: failures)] == 1) }
      #expect(counts[.lockedOut] == 396)
      await clock.advance(by: .seconds(30))
      #expect(changes.all == Array(repeating: expected, count: round).flatMap { $0 })
    }
  }

  @Test func failuresAndSuccessesStormKeepsCountBelowMax() async {
    let clock = ManualClock()
    let drain = CallbackDrain()
    let changes = Recorder<PasscodeLockout.State>()
    let lockout = PasscodeLockout(
      maxFailures: 1_000_000, clock: clock, callbackQueue: drain.queue
    ) { changes.append($0) }
    DispatchQueue.concurrentPerform(iterations: 8) { index in
      for _ in 0..<200 {
        if index.isMultiple(of: 4) { lockout.recordSuccess() } else { lockout.recordFailure() }
      }
    }
    await drain.drain()
    guard case .open(let failures) = lockout.state else {
      Issue.record("locked out with an unreachable maxFailures")
      return
    }
    #expect(failures <= 1200)
    // Each report differs from the one before it: a state is reported once per change.
    let reports = changes.all
    #expect(zip(reports, reports.dropFirst()).allSatisfy { $0 != $1 })
    #expect(reports.last == lockout.state || (reports.isEmpty && failures == 0))
  }
}
