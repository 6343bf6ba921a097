import DelayedPreemptiveDispatch

/// One line that counts the outcomes of a scenario's submissions.
struct Summary {
  let submissions: Int
  let executed: Int
  let preempted: Int
  let cancelled: Int

  init(_ timeline: Timeline) {
    let outcomes = timeline.submissions.map(\.outcome)
    submissions = outcomes.count
    executed = outcomes.filter { $0 == .executed }.count
    preempted = outcomes.filter { $0 == .preempted }.count
    cancelled = outcomes.filter { $0 == .cancelled }.count
  }

  func text(_ style: Style) -> String {
    "outcomes: \(submissions) submissions, " + style.green("\(executed) executed") + ", "
      + style.yellow("\(preempted) preempted") + ", " + style.red("\(cancelled) cancelled")
      + " (the task ran \(executed) time\(executed == 1 ? "" : "s"))"
  }
}
