import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Where a firing timer delivers: on a serial dispatch queue (the GCD shells run the due task
/// right there, in the timer's block) or in an async context (the actors).
@usableFromInline
enum TimerDelivery: Sendable {
  case queue(DispatchQueue, @Sendable () -> Void)
  case task(@Sendable () async -> Void)
}
