/// A random number generator whose whole sequence a seed decides (SplitMix64), for model-based
/// tests: draw a random sequence of calls from it, print the seed with a failure, and replay
/// the failing sequence from that seed.
///
/// ```swift
/// let seed = UInt64.random(in: 1...UInt64.max)
/// var random = SeededRandomNumberGenerator(seed: seed)
/// let delay = Duration.milliseconds(Int.random(in: 0..<500, using: &random))
/// ```
///
/// It is not for cryptography, and its sequence is the same on every platform.
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
  private var state: UInt64

  /// A generator whose sequence `seed` decides.
  public init(seed: UInt64) {
    state = seed
  }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var mixed = state
    mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
    mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
    return mixed ^ (mixed >> 31)
  }
}
