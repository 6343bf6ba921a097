// This target depends on, and imports, nothing of the library but the testing module: the
// README's "Testing without sleeping" snippet compiles only if that module re-exports the
// main one.
import DelayedPreemptiveDispatchTesting
import Testing

/// The README's "Testing without sleeping" snippet, with only `DelayedPreemptiveDispatchTesting`
/// imported.
@Suite struct TestingModuleImportTests {
  final class Counter: Sendable {
    private let box = LockBox(0)

    func increment() { box.withLock { $0 += 1 } }
    var value: Int { box.withLock { $0 } }
  }

  @Test func readmeSnippetCompilesWithTheTestingModuleAlone() async {
    let counter = Counter()
    let clock = ManualClock()
    let queue = DelayedPreemptiveDispatchQueue(clock: clock) { counter.increment() }
    queue.delay(0.5)
    await clock.advance(by: .milliseconds(499))
    #expect(counter.value == 0)
    await clock.advance(by: .milliseconds(1))  // returns after the task has run
    #expect(counter.value == 1)
  }
}
