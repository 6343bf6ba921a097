import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Where a firing timer delivers: on a serial dispatch queue (the GCD shells; the single queue
/// runs the due task right there, in the timer's block, while the keyed queue starts worker
/// blocks on its target, `runsWorkerInline: false`) or in an async context (the actors).
@usableFromInline
enum TimerDelivery: Sendable {
  case queue(DispatchQueue, @Sendable () -> Void)
  case task(@Sendable () async -> Void)
}
