import DelayedPreemptiveDispatch
import DelayedPreemptiveDispatchTesting

/// One step of a random sequence over several keys, as every engine of the rules takes it.
/// Delays and times are whole milliseconds.
public enum ModelOperation: Sendable, Equatable, CustomStringConvertible {
  /// A submission of `value` for `key`, due `milliseconds` from now (negative counts as 0).
  case delay(key: Int, milliseconds: Int64, value: String)
  /// Submissions for distinct keys at one instant, as one batch where the engine has batches.
  case batch([Submission])
  case cancel(key: Int)
  case flush(key: Int)
  case cancelAll
  case flushAll
  /// Time moves on and no timer fires: what falls due waits for the next event (T7).
  case hold(milliseconds: Int64)
  /// Time moves on, and each burst runs at its due instant on the way.
  case advance(milliseconds: Int64)

  /// One submission of a ``batch(_:)``.
  public struct Submission: Sendable, Equatable {
    public var key: Int
    public var milliseconds: Int64
    public var value: String

    public init(key: Int, milliseconds: Int64, value: String) {
      self.key = key
      self.milliseconds = milliseconds
      self.value = value
    }
  }

  public var description: String {
    switch self {
    case .delay(let key, let milliseconds, let value): "delay(\(key), \(milliseconds), \(value))"
    case .batch(let submissions):
      "batch(\(submissions.map { "\($0.key): \($0.milliseconds) \($0.value)" }.joined(separator: ", ")))"
    case .cancel(let key): "cancel(\(key))"
    case .flush(let key): "flush(\(key))"
    case .cancelAll: "cancelAll()"
    case .flushAll: "flushAll()"
    case .hold(let milliseconds): "hold(\(milliseconds))"
    case .advance(let milliseconds): "advance(\(milliseconds))"
    }
  }
}

/// A random sequence of ``ModelOperation``s over `keyCount` keys that a seed decides, and the
/// options it runs under: the same seed gives the same options and operations to every
/// engine, so that a failing seed printed by one engine's test replays in the other's.
public struct KeyedModelSequence: Sendable {
  /// What the engine under test offers beyond the common rules.
  public struct Engine: Sendable {
    /// `leading` runs (the in-process engines; the store has none).
    public var leading: Bool
    /// `.append` (the store; the in-process engines replace).
    public var append: Bool
    /// Steps of ``ModelOperation/hold(milliseconds:)``: time that moves with every timer late.
    public var lateTimers: Bool

    public init(leading: Bool, append: Bool, lateTimers: Bool = true) {
      self.leading = leading
      self.append = append
      self.lateTimers = lateTimers
    }

    public static let inProcess = Engine(leading: true, append: false)
    /// The PostgreSQL store: no `leading`, `.append` as well as `.replace`.
    public static let store = Engine(leading: false, append: true)
  }

  /// The sequences that check the PostgreSQL store, and the in-process driver on the same
  /// seeds: ``storeSequenceCount`` of them, of ``storeSteps`` steps over 8 keys.
  public static let storeSequenceCount = 1_000
  public static let storeSteps = 200

  /// The seed of the store's `index`-th sequence.
  public static func storeSeed(_ index: Int) -> UInt64 {
    UInt64(index) &* 104_729 &+ 11
  }

  public let seed: UInt64
  public let options: DelayOptions
  public let merge: ReferenceModel.Merge
  public let keyCount: Int
  /// The maximum number of runs at once, drawn for engines that bound it (the keyed driver).
  public let concurrencyLimit: Int?
  private let engine: Engine
  private var random: SeededRandomNumberGenerator
  private var step = 0

  /// `keyCount`: the number of keys; nil draws 1 to 8.
  public init(seed: UInt64, engine: Engine, keyCount: Int? = nil) {
    self.seed = seed
    self.engine = engine
    var random = SeededRandomNumberGenerator(seed: seed)
    var options = Self.randomOptions(&random)
    // Drawn for every engine, so that the rest of the sequence is the same for all.
    let appends = Bool.random(using: &random)
    if !engine.leading { options.leading = false }
    merge = engine.append && appends && !options.leading ? .append : .replace
    self.options = options
    let drawnKeys = Int.random(in: 1...8, using: &random)
    self.keyCount = keyCount ?? drawnKeys
    concurrencyLimit = Bool.random(using: &random) ? Int.random(in: 1...3, using: &random) : nil
    self.random = random
  }

  /// Options with every rule drawn: the deadline policy, `maxWait` (whole seconds, 0 to 3),
  /// `leading`, `maxSubmissions` (1 to 5) and `minimumSpacing` (0 to 1.5 s).
  public static func randomOptions(_ random: inout SeededRandomNumberGenerator) -> DelayOptions {
    DelayOptions(
      deadlinePolicy: Bool.random(using: &random) ? .extend : .restart,
      maxWait: Bool.random(using: &random)
        ? nil : .seconds(Int64.random(in: 0...3, using: &random)),
      leading: Int.random(in: 0..<4, using: &random) == 0,
      maxSubmissions: Bool.random(using: &random) ? nil : Int.random(in: 1...5, using: &random),
      minimumSpacing: Int.random(in: 0..<3, using: &random) == 0
        ? .milliseconds(Int64.random(in: 0...1_500, using: &random)) : nil)
  }

  /// The next operation.
  public mutating func next() -> ModelOperation {
    defer { step += 1 }
    let key = Int.random(in: 0..<keyCount, using: &random)
    let roll = Int.random(in: 0..<100, using: &random)
    let elapsed = Int64.random(in: 0...1_500, using: &random)
    switch roll {
    case 0..<50:
      let delay = Int64.random(in: -200...2_500, using: &random)
      return .delay(key: key, milliseconds: delay, value: "v\(step)")
    case 50..<55:
      var keys = Set<Int>()
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        keys.insert(Int.random(in: 0..<keyCount, using: &random))
      }
      return .batch(
        keys.sorted().enumerated().map { index, key in
          .init(
            key: key, milliseconds: Int64.random(in: -200...2_500, using: &random),
            value: "v\(step).\(index)")
        })
    case 55..<61: return .cancel(key: key)
    case 61..<67: return .flush(key: key)
    case 67..<69: return .cancelAll
    case 69..<71: return .flushAll
    case 71..<78 where engine.lateTimers: return .hold(milliseconds: elapsed)
    default: return .advance(milliseconds: elapsed)
    }
  }
}

/// One ``ReferenceModel`` per key, stepped by ``ModelOperation``s: what every engine of the
/// keyed rules must agree with.
public struct KeyedReferenceModel: Sendable {
  public private(set) var keys: [ReferenceModel]

  public init(
    keyCount: Int, options: DelayOptions, merge: ReferenceModel.Merge = .replace,
    spacingOrigin: ReferenceModel.SpacingOrigin = .decidedInstant
  ) {
    keys = (0..<keyCount).map { _ in
      ReferenceModel(options: options, merge: merge, spacingOrigin: spacingOrigin)
    }
  }

  public subscript(key: Int) -> ReferenceModel { keys[key] }

  public var now: Int64 { keys.first?.now ?? 0 }

  public mutating func apply(_ operation: ModelOperation) {
    switch operation {
    case .delay(let key, let milliseconds, let value): keys[key].delay(milliseconds, value)
    case .batch(let submissions):
      for submission in submissions {
        keys[submission.key].delay(submission.milliseconds, submission.value)
      }
    case .cancel(let key): keys[key].cancel()
    case .flush(let key): keys[key].flush()
    case .cancelAll: for index in keys.indices { keys[index].cancel() }
    case .flushAll: for index in keys.indices { keys[index].flush() }
    case .hold(let milliseconds): for index in keys.indices { keys[index].hold(by: milliseconds) }
    case .advance(let milliseconds):
      for index in keys.indices { keys[index].advance(by: milliseconds) }
    }
  }
}
