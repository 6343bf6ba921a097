/// The state of a ``BurstRecord`` packed into one word, so that a record is a 24-byte object:
/// six flags and the outcome of the burst's last submission in the low byte, and a submission's
/// sequence number in the 56 bits above.
///
/// The sequence number is the one the burst needs at the time: while the burst is open, every
/// non-leading submission below it is known to be preempted (`preemptedBelow`); once it is
/// closed, it is the last submission, which runs or is cancelled (`lastSeq`). The leading
/// submission needs no number here: its ticket says it is the leading one.
///
/// Sequence numbers are kept modulo 2⁵⁶ and compared as distances, so a ticket compares right as
/// long as fewer than 2⁵⁵ submissions reach the instance while its burst is pending.
struct BurstRecordWord: Sendable {
  var bits: UInt64

  static let keepsAllBit: UInt64 = 1 << 0
  static let leadingFinishedBit: UInt64 = 1 << 1
  static let closedBit: UInt64 = 1 << 2
  /// Closed with a last submission (`lastSeq` is not `nil`).
  static let hasLastBit: UInt64 = 1 << 3
  /// Open, with `preemptedBelow` set.
  static let preemptedBit: UInt64 = 1 << 4
  static let hasWaitersBit: UInt64 = 1 << 5
  /// Two bits: 0 while unknown, then `.executed`, `.preempted`, `.cancelled` as 1, 2, 3.
  static let outcomeShift: UInt64 = 6
  static let seqShift: UInt64 = 8
  static let seqMask: UInt64 = (1 << 56) - 1

  init(keepsAll: Bool) {
    bits = keepsAll ? Self.keepsAllBit : 0
  }

  func has(_ bit: UInt64) -> Bool { bits & bit != 0 }

  mutating func set(_ bit: UInt64, _ value: Bool) {
    bits = value ? bits | bit : bits & ~bit
  }

  /// The burst keeps every value (`combine`): no submission is preempted, and every one but
  /// the leading one resolves with the burst's end.
  var keepsAll: Bool { has(Self.keepsAllBit) }

  /// Set once the leading submission's task has returned.
  var leadingFinished: Bool {
    get { has(Self.leadingFinishedBit) }
    set { set(Self.leadingFinishedBit, newValue) }
  }

  /// Set when the burst ends.
  var closed: Bool { has(Self.closedBit) }

  /// Whether tasks wait on the record (in its lock's table).
  var hasWaiters: Bool {
    get { has(Self.hasWaitersBit) }
    set { set(Self.hasWaitersBit, newValue) }
  }

  /// The sequence number stored, modulo 2⁵⁶.
  var seq: UInt64 { bits >> Self.seqShift }

  /// Set once the last submission has run (`.executed`) or was cancelled.
  var lastOutcome: DelayOutcome? {
    get {
      switch (bits >> Self.outcomeShift) & 3 {
      case 1: return .executed
      case 2: return .preempted
      case 3: return .cancelled
      default: return nil
      }
    }
    set {
      let code: UInt64
      switch newValue {
      case nil: code = 0
      case .executed: code = 1
      case .preempted: code = 2
      case .cancelled: code = 3
      }
      bits = bits & ~(3 << Self.outcomeShift) | code << Self.outcomeShift
    }
  }

  /// Every non-leading submission below `seq` is preempted; nothing changes once closed.
  @inline(__always)
  mutating func notePreempted(below seq: UInt64) {
    guard !has(Self.closedBit) else { return }
    if has(Self.preemptedBit), !Self.precedes(self.seq, seq) { return }
    bits =
      bits & (1 << Self.seqShift - 1) | Self.preemptedBit | (seq & Self.seqMask) << Self.seqShift
  }

  /// The burst ended: `lastSeq` runs or is cancelled, every other non-leading submission was
  /// preempted.
  mutating func close(lastSeq: UInt64?) {
    bits = bits & (1 << Self.seqShift - 1) & ~Self.preemptedBit | Self.closedBit
    if let lastSeq {
      bits |= Self.hasLastBit | (lastSeq & Self.seqMask) << Self.seqShift
    }
  }

  /// Whether sequence number `earlier` comes before `later`, both modulo 2⁵⁶.
  static func precedes(_ earlier: UInt64, _ later: UInt64) -> Bool {
    let distance = (later &- earlier) & seqMask
    return distance != 0 && distance < 1 << 55
  }

  /// The outcome of submission `seq` as far as the word knows it; `nil` while it is open.
  func outcome(of seq: UInt64, leading: Bool) -> DelayOutcome? {
    if leading { return leadingFinished ? .executed : nil }
    if closed {
      guard has(Self.hasLastBit) else { return .preempted }
      if keepsAll || seq & Self.seqMask == self.seq { return lastOutcome }
      return .preempted
    }
    return has(Self.preemptedBit) && Self.precedes(seq, self.seq) ? .preempted : nil
  }
}
