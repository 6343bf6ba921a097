import Foundation
import Testing

/// The Guarantees article names a test behind every promise; this keeps those names true.
@Suite struct GuaranteesArticleTests {
  static let testsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
  static let repository = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
  static let catalog = repository.appendingPathComponent(
    "Sources/DelayedPreemptiveDispatch/DelayedPreemptiveDispatch.docc")
  static let article = catalog.appendingPathComponent("Guarantees.md")
  /// The Postgres package's article names tests of that package.
  static let replicasArticle = catalog.appendingPathComponent("AcrossReplicasWithPostgreSQL.md")
  static let postgresTestsDirectory = repository.appendingPathComponent("Postgres/Tests")

  /// `Suite.testName` references in the article, or bare `Suite` ones.
  static func references(in text: String) -> [(suite: String, test: String?)] {
    let pattern = /`([A-Z][A-Za-z]*Tests)(?:\.([a-z][A-Za-z0-9]*))?`/
    return text.matches(of: pattern).map { (String($0.1), $0.2.map(String.init)) }
  }

  /// Every `struct XTests` in the test sources of every test target of this package and of the
  /// Postgres package, with the names of its `func`s.
  static func declaredTests() throws -> [String: Set<String>] {
    var suites: [String: Set<String>] = [:]
    let files = [testsDirectory.deletingLastPathComponent(), postgresTestsDirectory].flatMap {
      directory in
      (FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
        .allObjects ?? []).compactMap { $0 as? URL }
    }
    for file in files where file.pathExtension == "swift" {
      let source = try String(contentsOf: file, encoding: .utf8)
      guard let suite = source.firstMatch(of: /struct ([A-Z][A-Za-z]*Tests)\b/)?.1 else { continue }
      let functions = source.matches(of: /func ([a-z][A-Za-z0-9]*)\(/).map { String($0.1) }
      suites[String(suite), default: []].formUnion(functions)
    }
    return suites
  }

  @Test func everyTestTheArticleNamesExists() throws {
    let text = try String(contentsOf: Self.article, encoding: .utf8)
    let replicas = try String(contentsOf: Self.replicasArticle, encoding: .utf8)
    let references = Self.references(in: text) + Self.references(in: replicas)
    #expect(references.count > 50)
    #expect(Self.references(in: replicas).count > 10)
    let declared = try Self.declaredTests()
    let missing = references.filter { reference in
      guard let functions = declared[reference.suite] else { return true }
      return reference.test.map { !functions.contains($0) } ?? false
    }
    #expect(missing.isEmpty, "\(missing.map { "\($0.suite).\($0.test ?? "")" })")
  }

  @Test func everyTestTheStreamArticleNamesExists() throws {
    let article = Self.catalog.appendingPathComponent("DebouncingAStream.md")
    let references = Self.references(in: try String(contentsOf: article, encoding: .utf8))
    #expect(references.count >= 8)
    let declared = try Self.declaredTests()
    let missing = references.filter { reference in
      guard let functions = declared[reference.suite] else { return true }
      return reference.test.map { !functions.contains($0) } ?? false
    }
    #expect(missing.isEmpty, "\(missing.map { "\($0.suite).\($0.test ?? "")" })")
  }
}
