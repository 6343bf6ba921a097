import Foundation
import PostgresNIO
import Testing

@testable import DelayedPreemptiveDispatchPostgres

/// The claim loop's prefetch (`ClaimPace`): how many rows a worker claims ahead of its free
/// slots. Pure; needs no server.
/// How a worker gathers the ends of its runs (`Worker.endGathering`): only while a backlog
/// lasts, for as many ends as it has slots, and for about one claim round trip at most.
@Suite struct EndGatheringTests {
  typealias Gathering = GroupCommit<CompletionWriter>.Gathering

  @Test func endsAreWrittenAtOnceWithoutABacklogOrWithOneSlot() {
    var pace = ClaimPace(concurrency: 32)
    pace.claimed(took: .milliseconds(4))
    #expect(Worker<String>.endGathering(backlog: false, pace: pace) == nil)
    var single = ClaimPace(concurrency: 1)
    single.claimed(took: .milliseconds(4))
    #expect(Worker<String>.endGathering(backlog: true, pace: single) == nil)
  }

  @Test func aBacklogGathersOneEndPerSlotForAboutOneClaimRoundTrip() {
    var pace = ClaimPace(concurrency: 32)
    // Before any claim answered: 5 ms.
    #expect(
      Worker<String>.endGathering(backlog: true, pace: pace)
        == Gathering(minimum: 32, wait: .milliseconds(5)))
    pace.claimed(took: .microseconds(3_200))
    #expect(
      Worker<String>.endGathering(backlog: true, pace: pace)
        == Gathering(minimum: 32, wait: .milliseconds(4)))
    // At least 1 ms, at most 50 ms.
    var quick = ClaimPace(concurrency: 8)
    quick.claimed(took: .microseconds(100))
    #expect(
      Worker<String>.endGathering(backlog: true, pace: quick)
        == Gathering(minimum: 8, wait: .milliseconds(1)))
    var slow = ClaimPace(concurrency: 8)
    slow.claimed(took: .seconds(2))
    #expect(
      Worker<String>.endGathering(backlog: true, pace: slow)
        == Gathering(minimum: 8, wait: .milliseconds(50)))
  }
}

@Suite struct ClaimPaceTests {
  @Test func noRowIsClaimedAheadBeforeBothAveragesAreKnown() {
    var pace = ClaimPace(concurrency: 8)
    #expect(pace.prefetch == 0)
    pace.claimed(took: .milliseconds(2))
    #expect(pace.prefetch == 0)
    pace.ran(took: .milliseconds(1))
    // Slots free faster than a claim answers: twice the slots, the most.
    #expect(pace.prefetch == 16)
    #expect(pace.threshold == 8)
  }

  /// Rows enough for two round trips at the rate the slots free: 2 × 8 slots × 1 ms / 4 ms.
  @Test func thePrefetchCoversTwoRoundTripsAtTheRateTheSlotsFree() {
    var pace = ClaimPace(concurrency: 8)
    pace.claimed(took: .milliseconds(1))
    pace.ran(took: .milliseconds(4))
    #expect(pace.prefetch == 4)
    // A quarter of the slots is the least a claim asks for while a backlog lasts.
    #expect(pace.threshold == 2)
  }

  /// Handlers that take long against a claim's round trip get no prefetch: a claimed row never
  /// waits behind them while another worker's slot is free.
  @Test func slowHandlersGetNoPrefetch() {
    var pace = ClaimPace(concurrency: 32)
    pace.claimed(took: .milliseconds(2))
    pace.ran(took: .seconds(1))
    #expect(pace.prefetch == 0)
    #expect(pace.threshold == 8)
  }

  /// Each new sample weighs an eighth: one slow claim moves the average, and does not set it.
  @Test func theAveragesWeighEachNewSampleAnEighth() throws {
    var pace = ClaimPace(concurrency: 4)
    pace.claimed(took: .milliseconds(2))
    pace.claimed(took: .milliseconds(10))
    let roundTrip = try #require(pace.roundTrip)
    #expect(abs(roundTrip - 0.003) < 1e-9)
    pace.ran(took: .milliseconds(8))
    pace.ran(took: .zero)
    let slotTime = try #require(pace.slotTime)
    #expect(abs(slotTime - 0.007) < 1e-9)
  }
}

/// When the claim loop claims (`ClaimState`): after each event, whether it may claim, and how
/// many rows. Pure; needs no server.
@Suite struct ClaimStateTests {
  /// A claim that found fewer rows than it asked for, then the read of the next deadline.
  private func afterAShortClaim(running: Int = 1) -> (ClaimState, [UUID]) {
    var state = ClaimState(concurrency: 4)
    #expect(state.limit == 4)
    state.sent()
    #expect(state.limit == nil)
    let claims = (0..<running).map { _ in UUID() }
    state.running.formUnion(claims)
    state.backlog = false
    state.readsNextDue()
    #expect(state.limit == nil)
    return (state, claims)
  }

  @Test func withNothingEndedMeanwhileTheLoopSleepsAsTheReadSays() {
    var (state, _) = afterAShortClaim()
    let sleeps = state.readAnswered()
    #expect(sleeps)
    #expect(state.limit == nil)
  }

  /// A run that ends while the read is in flight can make the next burst of its key due at
  /// once, after the read's snapshot: the loop claims again rather than sleep until the read's
  /// deadline (up to `safetyPoll`).
  @Test func aRunThatEndsWhileTheNextDeadlineIsReadMakesTheLoopClaimAgainAtOnce() {
    var (state, claims) = afterAShortClaim()
    state.finished(claims[0], took: .milliseconds(1))
    // The read is still in flight: no second claim beside it.
    #expect(state.limit == nil)
    let sleeps = state.readAnswered()
    #expect(!sleeps)
    #expect(state.limit == 4)
  }

  /// The same for a doorbell that rings (a submission) while the read is in flight.
  @Test func aWakeWhileTheNextDeadlineIsReadMakesTheLoopClaimAgainAtOnce() {
    var (state, _) = afterAShortClaim()
    state.woke()
    let sleeps = state.readAnswered()
    #expect(!sleeps)
    #expect(state.limit == 3)
  }

  /// An end during one read does not carry over to the next.
  @Test func anEndCountsForTheReadItHappenedDuringOnly() {
    var (state, claims) = afterAShortClaim()
    state.finished(claims[0], took: .milliseconds(1))
    let first = state.readAnswered()
    #expect(!first)
    state.sent()
    state.readsNextDue()
    let second = state.readAnswered()
    #expect(second)
    #expect(state.limit == nil)
  }

  /// A failed claim or read waits for the loop to wake, whatever ended meanwhile.
  @Test func aFailureWaitsForTheWake() {
    var (state, claims) = afterAShortClaim()
    state.finished(claims[0], took: .milliseconds(1))
    state.failed()
    #expect(state.limit == nil)
    state.woke()
    #expect(state.limit == 4)
  }

  /// While a backlog lasts, a claim that got all it asked for is followed by the next at once.
  @Test func aFullClaimIsFollowedByTheNext() {
    var state = ClaimState(concurrency: 4)
    state.sent()
    state.backlog = true
    state.claimedAll()
    #expect(state.limit == 4)
  }
}

/// The prefetch against the real server: a busy worker holds claimed rows beyond its slots,
/// runs every row once, and when it is stopped runs what it claimed ahead, leaving no claim.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.skipReason))
struct PostgresPrefetchTests {
  @Test func aBusyWorkerClaimsAheadOfItsSlotsAndRunsWhatItClaimedWhenStopped() async throws {
    try await TestDatabase.withQueue("prefetch") { queue, client in
      let total = 20_000
      try await client.query(
        """
        INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
        SELECT \(queue.name), 'k' || i, '"v"'::jsonb, d.t, d.t, d.t
        FROM generate_series(1, \(total)) AS i, (SELECT clock_timestamp() AS t) AS d
        """)
      @Sendable func claimed() async throws -> Int {
        var count = 0
        for try await held in try await client.query(
          "SELECT count(*)::int8 FROM dpd_bursts WHERE name = \(queue.name) AND claim IS NOT NULL"
        ).decode(Int.self) {
          count = held
        }
        return count
      }
      let runs = RunList()
      let concurrency = 4
      let most = Locked(0)
      try await queue.withWorker(
        concurrency: concurrency, handler: { key, value in runs.append(key, value) }
      ) { () async throws in
        // A row is claimed while it runs, and until its end is recorded: more claims than slots
        // are rows claimed ahead. The worker is stopped as soon as that is seen.
        let ahead = try await TestDatabase.eventually(within: .seconds(30), every: .milliseconds(2))
        {
          let held = try await claimed()
          most.withLock { $0 = max($0, held) }
          return held > concurrency
        }
        #expect(ahead, "the worker held at most \(most.withLock { $0 }) claims")
      }
      // Every row claimed ran, and its end was recorded: none is left claimed.
      #expect(try await claimed() == 0)
      var left = 0
      for try await count in try await client.query(
        "SELECT count(*)::int8 FROM dpd_bursts WHERE name = \(queue.name)"
      ).decode(Int.self) {
        left = count
      }
      let ran = runs.count
      #expect(left > 0, "the worker was stopped mid-drain")
      #expect(ran == total - left, "\(ran) runs, \(total - left) rows gone")
      #expect(runs.keys.count == ran, "a key ran twice")
      try await client.query("DELETE FROM dpd_bursts WHERE name = \(queue.name)")
    }
  }
}

/// How a claimed row that waits for a free slot learns that its lease is lost (`LeaseBook`):
/// by a renewal that did not return its claim, or by its time passing without one. Pure; needs
/// no server.
@Suite struct LeaseBookTests {
  @Test func aWaitingClaimIsLostWhenARenewalMissesItOrItsTimePasses() {
    let book = LeaseBook()
    let now = ContinuousClock.now
    let held = UUID()
    let takenOver = UUID()
    let expired = UUID()
    book.add(held, expiry: now + .seconds(30))
    book.add(takenOver, expiry: now + .seconds(30))
    book.add(expired, expiry: now + .seconds(1))
    #expect(!book.isLostAlone(held, now: now))
    #expect(!book.isLostAlone(expired, now: now))
    book.renewed([held, takenOver], renewed: [held], sentAt: now, lease: .seconds(30))
    #expect(!book.isLostAlone(held, now: now))
    #expect(book.isLostAlone(takenOver, now: now))
    #expect(book.isLostAlone(expired, now: now + .seconds(2)))
    // Marked lost: no longer renewed.
    #expect(Set(book.held()) == [held])
    // A claim the book does not hold is lost.
    #expect(book.isLostAlone(UUID(), now: now))
  }
}
