import Testing

/// Misuses of `ManualClock` and of a clock's time line stop with a message that says what was
/// done wrong, checked from the `dpd-precondition-probe` subprocess like the other preconditions.
@Suite struct ClockPreconditionTests {
  @Test func overlappingAdvanceStopsWithMessage() throws {
    let result = try PreconditionTests.runProbe("clock-overlapping-advance")
    #expect(result.signal != nil, "the probe exited with \(String(describing: result.exitStatus))")
    #expect(
      result.stderr.contains(
        "Precondition failed: ManualClock.advance was called while another advance of the same "
          + "clock was still running"), "stderr: \(result.stderr)")
  }

  /// Before, the time line saturated there: every firing re-armed, and nothing ever ran again.
  @Test func clockMovedPastTheTimeLineStopsWithMessageInsteadOfSpinning() throws {
    let result = try PreconditionTests.runProbe("clock-time-line-overflow")
    #expect(result.signal != nil, "the probe exited with \(String(describing: result.exitStatus))")
    #expect(
      result.stderr.contains(
        "past the creation of this queue, actor or adapter, beyond the about 292 years"),
      "stderr: \(result.stderr)")
  }
}
