import Foundation

/// What the claim loop carries from one claim to the next, and how each event changes whether
/// it may claim. Pure: the loop (`Worker.claimLoop`) does the calls, this says when.
struct ClaimState: Sendable {
  /// The claims of the jobs in flight.
  var running = Set<UUID>()
  /// Rows claimed ahead of a free slot (the prefetch, see ``ClaimPace``), in claim order, with
  /// when their claim was sent: each starts as a slot frees.
  var ready: [(burst: ClaimedBurst, claimedAt: ContinuousClock.Instant)] = []
  /// The last claim got all it asked for, so more is probably due.
  var backlog = false
  /// A claim, or the read of the next deadline after it, is in flight (there is never more
  /// than one).
  private(set) var claiming = false
  /// The read of the next deadline is in flight.
  private(set) var readingNextDue = false
  /// A job ended or the worker woke while the read of the next deadline was in flight: its
  /// answer may be stale (an ended run can make the next burst of its key due at once), so the
  /// loop claims again rather than sleep as the read says.
  private(set) var stirredDuringRead = false
  /// Whether the loop may claim now: false after a claim that found fewer rows than it asked
  /// for, or that failed, until a job finishes or the sleep ends.
  private(set) var mayClaim = true
  /// A claim statement whose answer was lost may have claimed rows that this worker does not
  /// know of: until this instant, every claim first releases such rows. The window outlasts
  /// `connectionTimeout`, so that a statement the server ran late is swept too; past it, the
  /// lease still ends such a claim.
  var releaseUnknownUntil: ContinuousClock.Instant?
  var pace: ClaimPace

  init(concurrency: Int) {
    pace = ClaimPace(concurrency: concurrency)
  }

  /// Every claim this worker knows it holds.
  var known: [UUID] { Array(running) + ready.map(\.burst.claim) }

  /// How many rows to claim now, or nil for no claim: up to the free slots, and while a
  /// backlog lasts the prefetch beyond them. While a backlog lasts, a worker that holds rows
  /// waits until the claim is worth ``ClaimPace/threshold`` rows, rather than claiming one row
  /// per finished job; without a backlog it claims for any free slot at once.
  var limit: Int? {
    guard mayClaim, !claiming else { return nil }
    let held = running.count + ready.count
    let capacity = pace.concurrency + (backlog ? pace.prefetch : 0) - held
    guard capacity > 0 else { return nil }
    if backlog && held > 0 && capacity < pace.threshold { return nil }
    return capacity
  }

  /// A claim was sent.
  mutating func sent() {
    claiming = true
  }

  /// A job ended after `took` in its slot: a slot is free, and its run's end may have made
  /// another burst of its key due.
  mutating func finished(_ claim: UUID, took: Duration) {
    running.remove(claim)
    pace.ran(took: took)
    stirred()
  }

  /// The worker's sleep ended: a submission rang, or its time passed.
  mutating func woke() {
    stirred()
  }

  private mutating func stirred() {
    mayClaim = true
    if readingNextDue { stirredDuringRead = true }
  }

  /// The claim answered with all it asked for, and the loop may claim on.
  mutating func claimedAll() {
    claiming = false
    mayClaim = true
  }

  /// The claim answered with fewer rows than it asked for: the read of the next deadline is
  /// sent, and no claim is made until it answers.
  mutating func readsNextDue() {
    readingNextDue = true
    stirredDuringRead = false
  }

  /// The claim, or the read after it, failed: no claim is made until the loop wakes.
  mutating func failed() {
    claiming = false
    readingNextDue = false
    stirredDuringRead = false
    mayClaim = false
  }

  /// The read of the next deadline answered. Returns whether the loop sleeps as it says: not
  /// when a job ended or the worker woke meanwhile, for then the loop claims again at once.
  mutating func readAnswered() -> Bool {
    let stale = stirredDuringRead
    claiming = false
    readingNextDue = false
    stirredDuringRead = false
    mayClaim = stale
    return !stale
  }
}
