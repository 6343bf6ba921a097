// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in a package of their own, so that the library's own graph stays free of
// dependencies. Run them with `swift package --package-path Benchmarks benchmark`.

/// One executable per workload, each comparing every contender in the same run.
let workloads = ["Storm", "Memory", "FanOut", "FireLatency", "Threads", "Keyed", "Stream"].map { name in
  Target.executableTarget(
    name: name,
    dependencies: [
      "BenchmarkSupport", "Contenders", .product(name: "Benchmark", package: "benchmark"),
    ],
    path: "Benchmarks/\(name)",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
}

let package = Package(
  name: "DelayedPreemptiveDispatchBenchmarks",
  platforms: [.macOS(.v13)],
  dependencies: [
    .package(name: "DelayedPreemptiveDispatch", path: ".."),
    .package(
      url: "https://github.com/ordo-one/benchmark", exact: "1.38.1",
      traits: ["MallocInterposer"]),
    .package(url: "https://github.com/apple/swift-async-algorithms", exact: "1.1.4"),
    // Test-only: the ClockInteropTests hold the docs' recipe for testing with another clock.
    .package(url: "https://github.com/pointfreeco/swift-clocks", exact: "1.1.1"),
  ],
  targets: [
    .target(
      name: "Contenders",
      dependencies: [
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
      ]
    ),
    .target(
      name: "BenchmarkSupport",
      dependencies: ["Contenders", .product(name: "Benchmark", package: "benchmark")]
    ),
    .executableTarget(name: "ProfileDriver", dependencies: ["Contenders"]),
    // The actor storm's wall-clock guard, beside the instruction counts: scripts/actor-storm.sh.
    .executableTarget(name: "ActorStorm", dependencies: ["Contenders"]),
    // How the library behaves on a clock that is not its own ManualClock: swift-clocks'
    // TestClock and ImmediateClock. Here, so that the root package keeps no dependencies.
    .testTarget(
      name: "ClockInteropTests",
      dependencies: [
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "Clocks", package: "swift-clocks"),
      ]
    ),
  ] + workloads,
  swiftLanguageModes: [.v6]
)
