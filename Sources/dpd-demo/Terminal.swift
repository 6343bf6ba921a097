#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// How the demo styles its output: ANSI colours on a terminal, plain text when piped.
struct Style: Sendable {
  let colours: Bool

  /// Colours only when standard output is a terminal and `NO_COLOR` is not set.
  static var detected: Style {
    Style(colours: isatty(STDOUT_FILENO) == 1 && getenv("NO_COLOR") == nil)
  }

  /// A look for a piece of text, drawn only when colours are on.
  enum Paint: String {
    case bold = "1"
    case dim = "2"
    case red = "31"
    case green = "32"
    case yellow = "33"
    case cyan = "36"
  }

  func paint(_ text: String, _ paint: Paint) -> String { wrap(text, paint.rawValue) }
  func bold(_ text: String) -> String { paint(text, .bold) }
  func dim(_ text: String) -> String { paint(text, .dim) }
  func green(_ text: String) -> String { paint(text, .green) }
  func yellow(_ text: String) -> String { paint(text, .yellow) }
  func red(_ text: String) -> String { paint(text, .red) }
  func cyan(_ text: String) -> String { paint(text, .cyan) }

  private func wrap(_ text: String, _ code: String) -> String {
    colours ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
  }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
  var bytes = Array((text + "\n").utf8)
  var written = 0
  while written < bytes.count {
    let result = bytes.withUnsafeMutableBytes { buffer in
      write(STDERR_FILENO, buffer.baseAddress! + written, buffer.count - written)
    }
    guard result > 0 else { return }
    written += result
  }
}
