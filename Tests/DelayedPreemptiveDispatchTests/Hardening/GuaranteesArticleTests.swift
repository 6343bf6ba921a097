import Foundation
import Testing

/// The Guarantees article names a test behind every promise; this keeps those names true.
// Serialized: two tests matching one regex literal at once crashed once inside the regex engine
// (Index out of range in `references(in:)`).
@Suite(.serialized) struct GuaranteesArticleTests {
  static let testsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
  static let repository = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
  static let catalog = repository.appendingPathComponent(
    "Sources/DelayedPreemptiveDispatch/DelayedPreemptiveDispatch.docc")
  static let article = catalog.appendingPathComponent("Guarantees.md")
  /// The Postgres package's article names tests of that package.
  static let replicasArticle = catalog.appendingPathComponent("AcrossReplicasWithPostgreSQL.md")
  static let postgresTestsDirectory = repository.appendingPathComponent("Postgres/Tests")
  /// The Benchmarks package's tests: those of clocks the root package must not depend on.
  static let benchmarksTestsDirectory = repository.appendingPathComponent("Benchmarks/Tests")
  /// The Postgres package's catalog.
  static let postgresCatalog = repository.appendingPathComponent(
    "Postgres/Sources/DelayedPreemptiveDispatchPostgres/DelayedPreemptiveDispatchPostgres.docc")
  /// The Postgres package's own guarantees article.
  static let productionArticle = repository.appendingPathComponent(
    "Postgres/Sources/DelayedPreemptiveDispatchPostgres/DelayedPreemptiveDispatchPostgres.docc/"
      + "GuaranteesInProduction.md")

  /// `Suite.testName` references in the article, or bare `Suite` ones.
  static func references(in text: String) -> [(suite: String, test: String?)] {
    let pattern = /`([A-Z][A-Za-z]*Tests)(?:\.([a-z][A-Za-z0-9]*))?`/
    return text.matches(of: pattern).map { (String($0.1), $0.2.map(String.init)) }
  }

  /// Every `struct XTests` in the test sources of every test target of this package, of the
  /// Postgres package and of the Benchmarks package, with the names of its `func`s.
  static func declaredTests() throws -> [String: Set<String>] {
    var suites: [String: Set<String>] = [:]
    let directories = [
      testsDirectory.deletingLastPathComponent(), postgresTestsDirectory, benchmarksTestsDirectory,
    ]
    let files = directories.flatMap {
      directory in
      (FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
        .allObjects ?? []).compactMap { $0 as? URL }
    }
    for file in files where file.pathExtension == "swift" {
      let source = try String(contentsOf: file, encoding: .utf8)
      // Each function belongs to the nearest suite declared (or extended) above it.
      var suite: String?
      for match in source.matches(
        of: /(?:(?:struct|extension) ([A-Z][A-Za-z]*Tests)\b)|(?:func ([a-z][A-Za-z0-9]*)\()/)
      {
        if let declared = match.1 {
          suite = String(declared)
          suites[String(declared), default: []].formUnion([])
        } else if let function = match.2, let suite {
          suites[suite, default: []].insert(String(function))
        }
      }
    }
    return suites
  }

  @Test func everyTestTheArticleNamesExists() throws {
    let text = try String(contentsOf: Self.article, encoding: .utf8)
    let replicas = try String(contentsOf: Self.replicasArticle, encoding: .utf8)
    let production = try String(contentsOf: Self.productionArticle, encoding: .utf8)
    let references =
      Self.references(in: text) + Self.references(in: replicas)
      + Self.references(in: production)
    #expect(Self.references(in: production).count > 30)
    #expect(references.count > 50)
    #expect(Self.references(in: replicas).count > 10)
    let declared = try Self.declaredTests()
    let missing = references.filter { reference in
      guard let functions = declared[reference.suite] else { return true }
      return reference.test.map { !functions.contains($0) } ?? false
    }
    #expect(missing.isEmpty, "\(missing.map { "\($0.suite).\($0.test ?? "")" })")
  }

  /// The guides name tests too: the recipe for other clocks, the worker's start, the metrics.
  @Test func everyTestTheGuidesNameExists() throws {
    let guides = [
      Self.catalog.appendingPathComponent("GettingStarted.md"),
      Self.postgresCatalog.appendingPathComponent("GettingStarted.md"),
      Self.postgresCatalog.appendingPathComponent("OperatingAQueue.md"),
      Self.postgresCatalog.appendingPathComponent("Reference.md"),
    ]
    let references = try guides.flatMap {
      Self.references(in: try String(contentsOf: $0, encoding: .utf8))
    }
    #expect(references.contains { $0.suite == "TestClockRecipeTests" })
    #expect(references.contains { $0.suite == "PostgresObservabilityTests" })
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
