import Testing

/// One rule for the three adapters. A quiet period, settle delay or window that
/// is zero or negative, and a `maxWait` that is zero or negative, are programmer errors that
/// stop with a message naming the parameter, as `PasscodeLockout`'s `window` always did.
@Suite struct AdapterArgumentTests {
  @Test(arguments: [
    ("lockout-window", "PasscodeLockout: window must be positive, got 0.0 seconds"),
    ("pan-settle-delay", "PanSettleDetector: settleDelay must be positive, got 0.0 seconds"),
    ("pan-max-wait", "PanSettleDetector: maxWait must be positive, got -0.005 seconds"),
    (
      "resources-quiet-period",
      "AllResourcesLoadedSignal: quietPeriod must be positive, got -1.0 seconds"
    ),
    ("resources-max-wait", "AllResourcesLoadedSignal: maxWait must be positive, got 0.0 seconds"),
  ])
  func nonPositiveAdapterDurationStopsWithMessageNamingParameter(
    probe: String, message: String
  ) throws {
    let result = try PreconditionTests.runProbe(probe)
    #expect(result.signal != nil, "the probe exited with \(String(describing: result.exitStatus))")
    #expect(result.stderr.contains("Precondition failed: \(message)"), "stderr: \(result.stderr)")
  }
}
