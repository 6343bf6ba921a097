import Testing

extension Tag {
  /// Tests that wait on real time. They follow the rule of `RealTime`: "not before" strictly,
  /// "after" only eventually, and no waiting on a cooperative thread.
  @Tag static var realTime: Self
}
