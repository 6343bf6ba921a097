/// The command line of `dpd-demo`, parsed by hand: the package has no dependencies.
struct DemoOptions: Equatable {
  enum Backend: String, CaseIterable {
    case gcd
    case actor
  }

  enum Scenario: String, CaseIterable {
    case lockout
    case pan
    case resources
    case reindex
  }

  var backend = Backend.gcd
  var scenarios = Scenario.allCases
  var seed: UInt64?
  var showHelp = false

  static let usage = """
    dpd-demo: plays the three problems DelayedPreemptiveDispatch was made for, and a service
    that debounces per key, on real time, and draws a timeline of each: every submission, its
    preemption or cancellation, the moment the task fired, and the outcome of each submission.

    USAGE: swift run dpd-demo [--backend gcd|actor]
                              [--scenario lockout|pan|resources|reindex|all]
                              [--seed N] [--help]

    OPTIONS:
      --backend gcd|actor   What runs the delayed tasks: the GCD queue
                            (DelayedPreemptiveDispatchQueue, the default) or the Swift
                            concurrency actor (DelayedPreemptiveActor). The reindex
                            scenario uses the keyed queue
                            (KeyedDelayedPreemptiveDispatchQueue) with either backend.
      --scenario NAME       lockout:   wrong passcodes lead to a lockout, and it ends;
                            pan:       a burst of pan stops leads to one settle;
                            resources: resources arrive at random intervals, then "all loaded";
                            reindex:   four documents edited in overlapping bursts, each
                                       reindexed once after its own quiet period;
                            all:       the four, one after another (the default, about 10 s).
      --seed N              Seeds the random arrival times of the resources scenario.
      -h, --help            Shows this help.

    The first three scenarios also feed their events to the matching adapter (PasscodeLockout,
    PanSettleDetector, AllResourcesLoadedSignal), whose callbacks show on the "adapter" row.
    Colours are used only when standard output is a terminal and NO_COLOR is not set.
    """

  /// Parses `arguments` (without the program name); throws a message for the user on error.
  static func parse(_ arguments: [String]) throws(UsageError) -> DemoOptions {
    var options = DemoOptions()
    var remaining = arguments[...]
    while let argument = remaining.popFirst() {
      let (name, inlineValue) = split(argument)
      func value() throws(UsageError) -> String {
        if let inlineValue { return inlineValue }
        guard let next = remaining.popFirst() else { throw UsageError("\(name) needs a value") }
        return next
      }
      switch name {
      case "-h", "--help":
        options.showHelp = true
      case "--backend":
        let text = try value()
        guard let backend = Backend(rawValue: text) else {
          throw UsageError("unknown backend '\(text)': use gcd or actor")
        }
        options.backend = backend
      case "--scenario":
        let text = try value()
        if text == "all" {
          options.scenarios = Scenario.allCases
        } else if let scenario = Scenario(rawValue: text) {
          options.scenarios = [scenario]
        } else {
          throw UsageError(
            "unknown scenario '\(text)': use lockout, pan, resources, reindex or all")
        }
      case "--seed":
        let text = try value()
        guard let seed = UInt64(text) else { throw UsageError("--seed needs a whole number") }
        options.seed = seed
      default:
        throw UsageError("unknown argument '\(argument)'")
      }
    }
    return options
  }

  /// Splits `--name=value` into its parts.
  private static func split(_ argument: String) -> (String, String?) {
    guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else {
      return (argument, nil)
    }
    return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
  }
}

/// A command line the demo cannot run, with the message for the user.
struct UsageError: Error {
  let message: String

  init(_ message: String) {
    self.message = message
  }
}
