import Foundation
import Testing

/// The Guarantees article names a test behind every promise; this keeps those names true.
@Suite struct GuaranteesArticleTests {
  static let testsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
  static let article =
    testsDirectory
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Sources/DelayedPreemptiveDispatch/DelayedPreemptiveDispatch.docc")
    .appendingPathComponent("Guarantees.md")

  /// `Suite.testName` references in the article, or bare `Suite` ones.
  static func references(in text: String) -> [(suite: String, test: String?)] {
    let pattern = /`([A-Z][A-Za-z]*Tests)(?:\.([a-z][A-Za-z0-9]*))?`/
    return text.matches(of: pattern).map { (String($0.1), $0.2.map(String.init)) }
  }

  /// Every `struct XTests` in the test sources of every test target, with the names of its
  /// `func`s.
  static func declaredTests() throws -> [String: Set<String>] {
    var suites: [String: Set<String>] = [:]
    let files = FileManager.default.enumerator(
      at: testsDirectory.deletingLastPathComponent(), includingPropertiesForKeys: nil)
    for case let file as URL in files ?? FileManager.DirectoryEnumerator()
    where file.pathExtension == "swift" {
      let source = try String(contentsOf: file, encoding: .utf8)
      guard let suite = source.firstMatch(of: /struct ([A-Z][A-Za-z]*Tests)\b/)?.1 else { continue }
      let functions = source.matches(of: /func ([a-z][A-Za-z0-9]*)\(/).map { String($0.1) }
      suites[String(suite), default: []].formUnion(functions)
    }
    return suites
  }

  @Test func everyTestTheArticleNamesExists() throws {
    let text = try String(contentsOf: Self.article, encoding: .utf8)
    let references = Self.references(in: text)
    #expect(references.count > 50)
    let declared = try Self.declaredTests()
    let missing = references.filter { reference in
      guard let functions = declared[reference.suite] else { return true }
      return reference.test.map { !functions.contains($0) } ?? false
    }
    #expect(missing.isEmpty, "\(missing.map { "\($0.suite).\($0.test ?? "")" })")
  }
}
