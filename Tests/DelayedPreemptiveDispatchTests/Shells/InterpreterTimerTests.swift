import Testing

@testable import DelayedPreemptiveDispatch

/// The one interpreter cancels every timer that is no longer the armed one; a shell only arms
/// its timer and hands the handle to its driver.
@Suite struct InterpreterTimerTests {
  typealias Driver = BurstDriver<SingleLine<String>>

  /// Counts the cancellations of the handles it makes, by the order they were armed.
  final class Handles: Sendable {
    private let cancelled = LockBox<[Int]>([])
    private let made = LockBox(0)

    var cancellations: [Int] { cancelled.withLock { $0 } }

    func make() -> TimerHandle {
      let index = made.withLock { made in
        defer { made += 1 }
        return made
      }
      return TimerHandle { [cancelled] in cancelled.withLock { $0.append(index) } }
    }
  }

  static func driver() -> Driver {
    var driver = Driver(
      options: DelayOptions(deadlinePolicy: .restart), maxConcurrentTasks: 1,
      keepsLastWork: true, tracking: .onDemand)
    driver.installLine(MachineHarness.line, work: nil)
    return driver
  }

  /// A submission at `millisecond` that asks for `milliseconds` of quiet.
  static func submit(
    _ driver: inout Driver, at millisecond: Int64, for milliseconds: Int64, owner: AnyObject
  ) -> BurstEffects {
    driver.delay(
      MachineHarness.line, .duration(.milliseconds(milliseconds)),
      now: MachineHarness.tick(millisecond), work: "a", owner: owner
    ).1
  }

  static func perform(_ effects: BurstEffects, on driver: inout Driver, handles: Handles) {
    effects.perform(
      startWorkers: { _ in }, arm: { _ in handles.make() },
      install: { driver.install($0, generation: $1) }, becameIdle: {})
  }

  @Test func aTimerReplacedAfterItsHandleWasInstalledIsCancelled() {
    var driver = Self.driver()
    let (owner, handles) = (HarnessOwner(), Handles())
    Self.perform(Self.submit(&driver, at: 0, for: 100, owner: owner), on: &driver, handles: handles)
    #expect(handles.cancellations.isEmpty)
    // `.restart` moves the deadline earlier: a new timer replaces the installed one.
    let effects = Self.submit(&driver, at: 10, for: 20, owner: owner)
    #expect(effects.timer != nil)
    Self.perform(effects, on: &driver, handles: handles)
    #expect(handles.cancellations == [0])
  }

  @Test func aTimerReplacedBeforeItsHandleWasInstalledIsCancelledOnArrival() {
    var driver = Self.driver()
    let (owner, handles) = (HarnessOwner(), Handles())
    // Two events arm before the first one's effects are performed (two threads, one lock).
    let first = Self.submit(&driver, at: 0, for: 100, owner: owner)
    let second = Self.submit(&driver, at: 10, for: 20, owner: owner)
    #expect(first.timer != nil && second.timer != nil)
    Self.perform(second, on: &driver, handles: handles)
    #expect(handles.cancellations.isEmpty)
    // The first timer's handle arrives late: it names a timer that is no longer armed.
    Self.perform(first, on: &driver, handles: handles)
    #expect(handles.cancellations == [1])
  }

  @Test func aTimerThatFiredBeforeItsHandleWasInstalledIsCancelledOnArrival() throws {
    var driver = Self.driver()
    let (owner, handles) = (HarnessOwner(), Handles())
    let effects = Self.submit(&driver, at: 0, for: 100, owner: owner)
    let timer = try #require(effects.timer)
    _ = driver.timerFired(at: timer.deadline, generation: timer.generation)
    Self.perform(effects, on: &driver, handles: handles)
    #expect(handles.cancellations == [0])
  }

  @Test func releaseCancelsTheArmedTimer() {
    var driver = Self.driver()
    let (owner, handles) = (HarnessOwner(), Handles())
    Self.perform(Self.submit(&driver, at: 0, for: 100, owner: owner), on: &driver, handles: handles)
    driver.release().performRelease()
    #expect(handles.cancellations == [0])
  }
}
