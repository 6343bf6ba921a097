import Testing

@testable import DelayedPreemptiveDispatch

/// Nothing resumes under an instance's lock: a driver runs under it, so a preemption it learns
/// must reach the tasks awaiting a ticket only through its effects, which the interpreter
/// performs once the lock is released.
@Suite struct LockDisciplineTests {
  @Test func keyedPreemptionResumesNoWaiterInsideTheDriver() async throws {
    var driver = BurstDriver<KeyedLines<Int, String>>(options: DelayOptions())
    let owner = HarnessOwner()
    let second = MachineHarness.tick(1_000)
    // Due at 2 s, so that the submission at 1 s preempts it (one due by then would end: T7).
    let (first, _) = driver.delay(
      1, .nanoseconds(2_000_000_000), now: MachineHarness.tick(0), work: "a", owner: owner)
    let record = try #require(first.record?.0)
    let waiter = Task { await first.outcome }
    while record.withLock({ $0.waiters.isEmpty }) { await Task.yield() }
    let (_, effects) = driver.delay(
      1, .nanoseconds(2_000_000_000), now: second, work: "b", owner: owner)
    #expect(record.withLock { $0.waiters.count } == 1)
    #expect(effects.preempted === record)
    effects.perform(
      startWorkers: { _ in }, arm: { _ in .none }, install: { _, _ in nil }, becameIdle: {})
    #expect(await waiter.value == .preempted)
  }

  @Test func singlePreemptionResumesNoWaiterInsideTheDriver() async throws {
    var driver = BurstDriver<SingleLine<String>>(
      options: DelayOptions(), maxConcurrentTasks: 1, keepsLastWork: true, tracking: .onDemand)
    let line = MachineHarness.line
    driver.installLine(line, work: nil)
    let owner = HarnessOwner()
    let (first, _) = driver.delay(
      line, .nanoseconds(1_000), now: MachineHarness.tick(0), work: "a", owner: owner)
    let record = try #require(first.record?.0)
    let waiter = Task { await first.outcome }
    while record.withLock({ $0.waiters.isEmpty }) { await Task.yield() }
    driver.synchronize(record)  // what an awaiting ticket asks of its owner
    let (_, effects) = driver.delay(
      line, .nanoseconds(1_000), now: MachineHarness.tick(0), work: "b", owner: owner)
    #expect(record.withLock { $0.waiters.count } == 1)
    #expect(effects.preempted === record)
    effects.perform(
      startWorkers: { _ in }, arm: { _ in .none }, install: { _, _ in nil }, becameIdle: {})
    #expect(await waiter.value == .preempted)
  }
}
