// Stub declarations for the names that the README's and the DocC articles' snippets take from
// their surroundings: an app's document, views and loaders, a service's index and mailer.
// scripts/check-snippets.py compiles this file with every snippet. Each stub has the shape the
// text gives it (a view is `@MainActor`, a load is `async`) and does nothing.

import DelayedPreemptiveDispatch
import Foundation

// MARK: - An editor

final class Document: Sendable {
  let id = DocumentID(rawValue: 1)
  func save() {}
}
let document = Document()

/// The autosave queue that snippets about tickets and shutdown continue from.
let autosave = DelayedPreemptiveDispatchQueue(label: "autosave") { document.save() }
/// The same autosave on an actor.
let autosaveActor = DelayedPreemptiveActor { document.save() }

/// A thread-safe counter, as the snippets' "your own thread-safe counter" comments ask for.
final class Counter: Sendable {
  private let count = LockedInt()
  func increment() { count.add(1) }
  func reset() { count.set(0) }
  var value: Int { count.get() }
}
/// Sound as `@unchecked Sendable`: `value` is only touched with `lock` held. (A stub for the
/// snippets; the library itself uses its own lock box.)
final class LockedInt: @unchecked Sendable {
  private let lock = NSLock()
  private var value = 0
  func add(_ delta: Int) { locked { value += delta } }
  func set(_ newValue: Int) { locked { value = newValue } }
  func get() -> Int { locked { value } }
  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }
}
let counter = Counter()
let failures = Counter()

// MARK: - Search as you type

actor SearchResults {
  func load(_ query: String) async {}
  func show(_ hits: [String]) {}
}
let results = SearchResults()

/// Runs a search for `query`; throws `CancellationError` when the search was made stale.
func runSearch(_ query: String) async throws -> [String] {
  try Task.checkCancellation()
  return []
}

/// A text field's values as a stream, as a UI framework or a bridge of your own provides it.
final class SearchField: Sendable {
  let values = AsyncStream<String> { $0.finish() }
}
let searchField = SearchField()

/// Settings that reload from their store.
actor Settings {
  func reload() async {}
}
let settings = Settings()

// MARK: - Views on the main actor

@MainActor final class Keypad {
  var isEnabled = true
}
@MainActor let keypad = Keypad()
let expected = "1234"

@MainActor final class MapView {
  func loadTilesForVisibleRegion() {}
}
@MainActor let map = MapView()

@MainActor final class Spinner {
  func stop() {}
}
@MainActor let spinner = Spinner()

#if !canImport(UIKit)
  /// Stands in for UIKit's gesture recogniser where UIKit is not available.
  @MainActor final class UIPanGestureRecognizer {
    enum State { case possible, began, changed, ended, cancelled, failed }
    var state: State = .possible
  }
#endif

func refreshVisibleTiles() {}
func reportAllLoaded() {}
func reloadTable() {}

// MARK: - Downloads

let urls: [URL] = []
final class Downloader: Sendable {
  func download(_ url: URL, completion: @escaping @Sendable (Data?) -> Void) {}
}
let session = Downloader()

// MARK: - A service

struct DocumentID: Hashable, Sendable {
  var rawValue: Int
}
struct UserID: Hashable, Sendable {
  var rawValue: Int
}
struct User: Sendable {
  var id = UserID(rawValue: 1)
}
let user = User()

/// One change to a document.
struct Edit: Sendable {
  var text = ""
}
let edit = Edit()

final class SearchIndex: Sendable {
  func reindex(_ id: DocumentID, _ document: Document) {}
  func apply(_ edits: [Edit], to id: DocumentID) {}
}
let search = SearchIndex()

actor Mailer {
  func sendDigest(to user: UserID) async {}
  func notify(_ user: UserID, _ message: String) async {}
}
let mailer = Mailer()

/// The keyed instances that the shutdown snippets continue from.
let reindex = KeyedDelayedPreemptiveDispatchQueue<DocumentID, Document>(
  label: "reindex", maxConcurrentTasks: 4
) { id, document in search.reindex(id, document) }
let digests = KeyedDelayedPreemptiveActor<UserID, Void, ContinuousClock> { user, _ in
  await mailer.sendDigest(to: user)
}

// MARK: - Throttling

/// A long job's progress, read by a throttled report.
final class Progress: Sendable {
  var fractionCompleted: Double { 0 }
}
let progress = Progress()
func report(_ fraction: Double) {}

/// A sensor whose readings come as a stream.
final class Sensor: Sendable {
  let values = AsyncStream<Double> { $0.finish() }
}
let sensor = Sensor()
@MainActor func plot(_ reading: Double) {}
