import DelayedPreemptiveDispatch

/// A handful of documents edited in overlapping bursts: one keyed queue, keyed by document,
/// reindexes each document once, a quiet period after its own last edit, with the revision of
/// that last edit. Document C is edited again after its first reindex, and so is reindexed twice.
enum ReindexScenario {
  static let title = "Reindex per document"
  static let quietPeriod = Duration.milliseconds(500)
  static let maxConcurrentTasks = 2
  static let rules =
    "reindex each document \(seconds(quietPeriod)) after its own last edit,"
    + " at most \(maxConcurrentTasks) at once"

  /// When each document is edited, in milliseconds from the start.
  static let script: [(milliseconds: Int, document: Character)] = [
    (0, "A"), (100, "B"), (150, "A"), (250, "C"), (300, "A"), (400, "B"), (500, "D"),
    (600, "D"), (700, "B"), (900, "D"), (1000, "C"), (1100, "D"), (1300, "C"),
  ]

  /// The value of a submission: what the reindex needs, and which submission it came from.
  struct Edit: Sendable {
    var revision: Int
    var submission: Int
  }

  static func play(on backend: DemoOptions.Backend) async -> ScenarioRun {
    let label = "dpd-demo.reindex"
    let run: ScenarioRun
    let submit: @Sendable (Character, Edit) async -> DelayTicket
    let keepAlive: AnyObject
    switch backend {
    case .gcd:
      run = ScenarioRun(
        backendName:
          "keyed GCD queue (KeyedDelayedPreemptiveDispatchQueue<Character, Edit> \"\(label)\")")
      let reindex = KeyedDelayedPreemptiveDispatchQueue<Character, Edit>(
        label: label, maxConcurrentTasks: maxConcurrentTasks
      ) { document, edit in reindexed(document, edit, run, on: "the target queue") }
      submit = { document, edit in reindex.delay(document, for: quietPeriod, value: edit) }
      keepAlive = reindex
    case .actor:
      run = ScenarioRun(
        backendName: "keyed actor (KeyedDelayedPreemptiveActor<Character, Edit, ContinuousClock>)")
      let reindex = KeyedDelayedPreemptiveActor<Character, Edit, ContinuousClock>(
        maxConcurrentTasks: maxConcurrentTasks
      ) { document, edit in reindexed(document, edit, run, on: "a task off the actor") }
      submit = { document, edit in await reindex.delay(document, for: quietPeriod, value: edit) }
      keepAlive = reindex
    }
    var revisions: [Character: Int] = [:]
    for (index, (milliseconds, document)) in script.enumerated() {
      await run.at(.milliseconds(milliseconds))
      let revision = revisions[document, default: 0] + 1
      revisions[document] = revision
      run.input("document \(document) edited (revision \(revision))")
      let id = run.timeline.submit("\(document) edit \(revision)", delay: quietPeriod)
      run.timeline.log(
        .dispatch, "#\(id) submitted: delay(\"\(document)\", \(seconds(quietPeriod)))")
      let ticket = await submit(document, Edit(revision: revision, submission: id))
      run.follow(id, ticket, preemptedBy: nextEdit(of: document, after: index))
    }
    await run.finish { true }
    withExtendedLifetime(keepAlive) {}  // a released keyed instance cancels what is pending
    return run
  }

  private static func reindexed(
    _ document: Character, _ edit: Edit, _ run: ScenarioRun, on place: String
  ) {
    run.timeline.log(
      .fired,
      "#\(edit.submission) fired on \(place): reindex document \(document)"
        + " at revision \(edit.revision)")
  }

  /// Names the submission that preempts the edit at `index`, for the event log.
  private static func nextEdit(of document: Character, after index: Int) -> String {
    let later = script.indices.dropFirst(index + 1).first { script[$0].document == document }
    return later.map { "#\($0 + 1), the next edit of \(document)" } ?? "a later edit"
  }
}
