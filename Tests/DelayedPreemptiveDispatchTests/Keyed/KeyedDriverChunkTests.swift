import Testing

@testable import DelayedPreemptiveDispatch

/// The driver's performance shapes for many keys, that behaviour must not see: due bursts end in chunks
/// with the lock released in between, and the per-key table keeps no memory once it is empty.
@Suite struct KeyedDriverChunkTests {
  @Test func dueBurstsEndInChunksAndTheTimerIsRearmedOnlyAfterTheLast() throws {
    let owner = HarnessOwner()
    var driver = BurstDriver<KeyedLines<Int, String>>(
      options: DelayOptions(), maxConcurrentTasks: 1)
    var armed: TimerRequest?
    for key in 0..<10 {
      let (_, effects) = driver.delay(
        key, .nanoseconds(1_000_000), now: MachineHarness.tick(0), work: "v\(key)", owner: owner)
      if let timer = effects.timer { armed = timer }
    }
    _ = driver.delay(
      99, .nanoseconds(5_000_000), now: MachineHarness.tick(0), work: "late", owner: owner)
    let timer = try #require(armed)
    #expect(timer.deadline == MachineHarness.tick(1))

    var effects = driver.timerFired(at: timer.deadline, generation: timer.generation, limit: 4)
    var ended = effects.endedCount
    #expect(ended == 4 && effects.moreDue && effects.timer == nil)
    effects = driver.popDue(at: timer.deadline, limit: 4)
    ended += effects.endedCount
    #expect(ended == 8 && effects.moreDue && effects.timer == nil)
    effects = driver.popDue(at: timer.deadline, limit: 4)
    ended += effects.endedCount
    #expect(ended == 10 && !effects.moreDue)
    #expect(effects.timer?.deadline == MachineHarness.tick(5))
    #expect(driver.pendingCount == 1 && driver.isPending(99))
  }

  @Test func keyTableReusesFreedPositionsAndReleasesItsBuffersWhenEmpty() {
    var table = KeyTable<Int, String>()
    for key in 0..<1_000 { table.insert("\(key)", for: key) }
    let freed = table.position(of: 500)
    #expect(table.removeValue(forKey: 500) == "500")
    #expect(table[500] == nil)
    #expect(table.insert("new", for: 5_000) == freed)
    #expect(table[5_000] == "new" && table.count == 1_000)
    table[7]? += "!"
    #expect(table[7] == "7!")
    for key in 0..<1_000 { table[key] = nil }
    table.removeValue(forKey: 5_000)
    #expect(table.count == 0)
    #expect(table.values.capacity == 0 && table.slots.capacity == 0)
    #expect(table.freeSlots.capacity == 0)
  }
}
