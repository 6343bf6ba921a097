import Testing

/// Yields until `condition` holds, and records an issue if it still does not after a million
/// yields: a bounded wait for what another task finishes, that fails instead of hanging and
/// never sleeps.
func expectEventually(
  _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: () -> Bool
) async {
  for _ in 0..<1_000_000 {
    if condition() { return }
    await Task.yield()
  }
  Issue.record("still not the case after a million yields: \(what)", sourceLocation: sourceLocation)
}
