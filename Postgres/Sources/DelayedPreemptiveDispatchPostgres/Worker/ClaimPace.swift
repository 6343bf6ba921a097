/// How many due rows the claim loop claims ahead of its free slots while a backlog lasts (the
/// prefetch), and how many a claim must be worth meanwhile.
///
/// A slot that frees should find a claimed row waiting, not a claim's round trip: so the loop
/// keeps enough rows to cover two round trips at the rate its slots free, from running averages
/// of the claim's round trip and of a job's time in its slot. With handlers that take long
/// against a round trip, that is no row at all, and the loop claims for free slots only, as a
/// worker without a prefetch does: a claimed row never waits behind slow handlers while another
/// worker's slot is free. With handlers as quick as a round trip, it is at most twice the slots,
/// which bounds the rows a worker holds unstarted, and what it still runs when it is stopped.
///
/// A claim while a backlog lasts asks for at least a quarter of the slots, or half the prefetch
/// when that is more: then the rows that wait cover the claim's round trip, and each claim
/// carries many rows.
struct ClaimPace: Sendable {
  let concurrency: Int
  /// The running average of a claim's round trip, in seconds; nil before the first.
  private(set) var roundTrip: Double?
  /// The running average of a job's time in its slot, from its start to its end's record, in
  /// seconds; nil before the first.
  private(set) var slotTime: Double?

  init(concurrency: Int) {
    self.concurrency = concurrency
  }

  /// Each new sample weighs an eighth.
  private static func average(_ old: Double?, _ sample: Duration) -> Double {
    let seconds = Double(sample.components.seconds) + Double(sample.components.attoseconds) * 1e-18
    guard let old else { return seconds }
    return old + (seconds - old) / 8
  }

  mutating func claimed(took: Duration) { roundTrip = Self.average(roundTrip, took) }

  mutating func ran(took: Duration) { slotTime = Self.average(slotTime, took) }

  /// The rows to hold beyond the slots: those that free in two round trips, at most twice the
  /// slots; none before both averages are known.
  var prefetch: Int {
    guard let roundTrip, let slotTime else { return 0 }
    let rows = 2 * Double(concurrency) * roundTrip / max(slotTime, 1e-6)
    return Int(min(rows, Double(2 * concurrency)).rounded(.down))
  }

  /// The fewest rows a claim asks for while a backlog lasts and the worker holds rows.
  var threshold: Int { max(1, concurrency / 4, prefetch / 2) }
}
