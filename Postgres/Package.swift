// swift-tools-version: 6.1
import PackageDescription

// The PostgreSQL package: the keyed bursts of the root package, shared by every replica of a
// service through one database. It lives in its own package so that the root package keeps no
// dependencies.
let package = Package(
  name: "DelayedPreemptiveDispatchPostgres",
  platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
  products: [
    .library(
      name: "DelayedPreemptiveDispatchPostgres", targets: ["DelayedPreemptiveDispatchPostgres"]),
    .executable(name: "dpd-postgres-worker", targets: ["dpd-postgres-worker"]),
  ],
  dependencies: [
    // Named: a path dependency's identity is otherwise its folder's name, which differs
    // between checkouts (a worktree, CI's fresh clone).
    .package(name: "DelayedPreemptiveDispatch", path: ".."),
    .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    // Imported directly (NIOCore's deadlines and event loops, NIOPosix's timers), so declared,
    // at the version postgres-nio 1.33.2 itself asks for.
    .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
    .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
    .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
  ],
  targets: [
    .target(
      name: "DelayedPreemptiveDispatchPostgres",
      dependencies: [
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        // Only to read whether a PostgresClient runs (see ClientRunState.swift).
        .product(name: "Atomics", package: "swift-atomics"),
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "Instrumentation", package: "swift-distributed-tracing"),
      ]
    ),
    // The operator's tool: shows a queue's state and retries or discards a kept failure, for a
    // queue of any Value type.
    .executableTarget(
      name: "dpd-postgres-worker",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // A demo: a worker that prints its runs, and a way to submit to it. An example, not a
    // product: it ships with nothing (`swift run --package-path Postgres dpd-postgres-demo`).
    .executableTarget(
      name: "dpd-postgres-demo",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Examples/Demo"
    ),
    // Measures delay throughput, drain rate and fire lateness against a real server.
    .executableTarget(
      name: "dpd-postgres-bench",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // The replica under test: a worker whose handler records its runs, fences its writes or
    // kills its own process, as the tests ask. It is no product: it ships with nothing.
    .executableTarget(
      name: "dpd-postgres-test-worker",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Tests/TestWorker"
    ),
    .testTarget(
      name: "DelayedPreemptiveDispatchPostgresTests",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        "dpd-postgres-worker",
        "dpd-postgres-demo",
        "dpd-postgres-test-worker",
        .product(name: "DelayedPreemptiveDispatchTesting", package: "DelayedPreemptiveDispatch"),
        // The reference model of the rules, which the store is checked against (StoreModelTests).
        .product(name: "DelayedPreemptiveDispatchModel", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "MetricsTestKit", package: "swift-metrics"),
        .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
