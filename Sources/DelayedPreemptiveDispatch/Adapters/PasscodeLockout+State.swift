extension PasscodeLockout {
  /// Whether passcodes are accepted, and how many failures the current window has counted.
  public enum State: Sendable, Hashable {
    /// Passcodes are accepted; `failures` wrong ones were counted in the current window.
    case open(failures: Int)
    /// Passcodes are refused until the lockout ends.
    case lockedOut
  }
}
