/// Ends the iteration when the last copy of its iterator goes away: the iterator is a struct,
/// and has no `deinit` of its own.
@usableFromInline
final class IteratorLifetime<Base: AsyncSequence & Sendable, C: Clock>: Sendable
where Base.Element: Sendable, C.Duration == Duration {
  @usableFromInline let storage: DebounceStorage<Base, C>

  @inlinable
  init(storage: DebounceStorage<Base, C>) {
    self.storage = storage
  }

  deinit {
    storage.end()
  }
}
