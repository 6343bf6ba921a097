#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

let options: DemoOptions
do {
  options = try DemoOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
  printError("dpd-demo: \(error.message)\n")
  printError(DemoOptions.usage)
  exit(2)
}
if options.showHelp {
  print(DemoOptions.usage)
  exit(0)
}

let style = Style.detected
let renderer = TimelineRenderer(style: style)
let seed = options.seed ?? UInt64.random(in: 1...99_999)
let started = ContinuousClock.now

for (index, scenario) in options.scenarios.enumerated() {
  let (title, rules, run): (String, String, ScenarioRun)
  switch scenario {
  case .lockout:
    (title, rules) = (LockoutScenario.title, LockoutScenario.rules)
    run = await LockoutScenario.play(on: options.backend)
  case .pan:
    (title, rules) = (PanScenario.title, PanScenario.rules)
    run = await PanScenario.play(on: options.backend)
  case .resources:
    (title, rules) = (ResourcesScenario.title, ResourcesScenario.rules + ", seed \(seed)")
    run = await ResourcesScenario.play(on: options.backend, seed: seed)
  case .reindex:
    (title, rules) = (ReindexScenario.title, ReindexScenario.rules)
    run = await ReindexScenario.play(on: options.backend)
  }
  let heading = "== \(index + 1)/\(options.scenarios.count) \(title) "
  print(style.bold(heading + String(repeating: "=", count: max(0, 78 - heading.count))))
  print("ran by: " + style.bold(run.backendName))
  print("rules:  " + rules)
  print("")
  for line in renderer.render(run.timeline) { print(line) }
  print("")
  print(Summary(run.timeline).text(style))
  print("")
}

print(style.dim("legend: o submitted, - pending, x preempted, c cancelled, * task fired, ^ input"))
print(
  style.dim(
    "adapter row: 0-9 lockout open with that many failures, L locked out, S pan settled,"
      + " A all resources loaded"))
print(style.dim("done in \(seconds(ContinuousClock.now - started))"))
