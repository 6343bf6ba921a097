// Stub declarations for the names that the Postgres snippets (the Postgres package's DocC
// articles, and the README's and the root article's Postgres snippets) take from their
// surroundings: a service's edits, its index, its client and its queue.
// `scripts/check-snippets.py --postgres` compiles this file with every such snippet. Each stub
// has the shape the text gives it and does nothing.

import DelayedPreemptiveDispatchPostgres
import Foundation
import Logging
import PostgresNIO

/// One edit of a document: the value of a reindex burst, as Getting Started declares it.
struct Edit: Codable, Sendable, Hashable {
  var document: String
  var text: String
}
let edit = Edit(document: "document-42", text: "")
let documentID = "document-42"

/// Reindexes a document, optionally fencing its write.
func index(_ documentID: String, _ edit: Edit) async throws {}
func index(_ documentID: String, _ edit: Edit, fence: Int64) async throws {}

let logger = Logger(label: "snippets")
let configuration = PostgresClient.Configuration(
  host: "localhost", username: "app", password: nil, database: "app", tls: .disable)
let client = PostgresClient(configuration: configuration)
/// The queue that snippets continue from.
let reindex = PostgresDelayedPreemptiveQueue<Edit>(
  client: client, configuration: configuration, name: "reindex")
/// The queue that doc comments' snippets call `queue`.
let queue = reindex

/// A document of the service, which a snippet submits by its id.
struct Document: Sendable {
  var id: String
}
let document = Document(id: documentID)
