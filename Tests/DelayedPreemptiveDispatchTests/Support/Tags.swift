import Testing

extension Tag {
  /// Tests that wait on real time: a few, with margins that survive a loaded 2-core machine.
  /// They assert "not before" strictly and "not after" loosely.
  @Tag static var realTime: Self
}
