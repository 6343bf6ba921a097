/// The end of one burst: the run it decided, if any, and how its tickets resolve.
@usableFromInline
struct BurstEnding<Work: Sendable> {
  @usableFromInline var run: DecidedRun<Work>?
  @usableFromInline var resolution: BurstResolution

  @inlinable
  init(run: DecidedRun<Work>?, resolution: BurstResolution) {
    self.run = run
    self.resolution = resolution
  }
}
