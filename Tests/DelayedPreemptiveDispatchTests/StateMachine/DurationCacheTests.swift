import Testing

@testable import DelayedPreemptiveDispatch

@Suite struct DurationCacheTests {
  @Test func convertsEveryDurationExactlyWhetherCachedOrNot() {
    var cache = DurationCache()
    let durations: [Duration] = [
      .milliseconds(300), .milliseconds(300), .milliseconds(100), .zero, .milliseconds(300),
      .seconds(-2), .nanoseconds(1), .seconds(Int64.max), .seconds(Int64.min),
    ]
    for duration in durations {
      #expect(cache.nanoseconds(of: duration) == duration.saturatingNanoseconds)
    }
    #expect(cache.nanoseconds(of: .milliseconds(300)) == 300_000_000)
    #expect(cache.nanoseconds(of: .seconds(Int64.max)) == .max)
    #expect(cache.nanoseconds(of: .seconds(Int64.min)) == .min)
  }
}
