/// Lets a `rethrows` function throw an error it holds in a `Result`: a `@rethrows` protocol
/// makes the compiler count the call as throwing only where the function itself may throw, as
/// the standard library's own `AsyncIteratorProtocol` does.
///
/// ``AsyncDebouncedSequence/Iterator/next()`` uses it, so that the debounced sequence of a base
/// that never throws is read with `for await`, and the one of a throwing base with
/// `for try await`.
@rethrows @usableFromInline
protocol RethrowingResult {
  associatedtype Success
  func get() throws -> Success
}

extension Result: RethrowingResult {}

extension RethrowingResult {
  /// The success value, or the error thrown as if by the caller's throwing parameter.
  @inlinable
  func rethrowingGet() rethrows -> Success {
    try get()
  }
}
