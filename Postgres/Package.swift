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
  ],
  targets: [
    .target(
      name: "DelayedPreemptiveDispatchPostgres",
      dependencies: [
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
      ]
    ),
    // The replica process: runs a queue's worker until SIGTERM. The tests start three of them.
    .executableTarget(
      name: "dpd-postgres-worker",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
      ]
    ),
    // Measures delay throughput, drain rate and fire lateness against a real server.
    .executableTarget(
      name: "dpd-postgres-bench",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        .product(name: "DelayedPreemptiveDispatch", package: "DelayedPreemptiveDispatch"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
      ]
    ),
    .testTarget(
      name: "DelayedPreemptiveDispatchPostgresTests",
      dependencies: [
        "DelayedPreemptiveDispatchPostgres",
        "dpd-postgres-worker",
        .product(name: "PostgresNIO", package: "postgres-nio"),
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
