// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "DelayedPreemptiveDispatch",
  platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
  products: [
    .library(name: "DelayedPreemptiveDispatch", targets: ["DelayedPreemptiveDispatch"]),
    .library(
      name: "DelayedPreemptiveDispatchTesting", targets: ["DelayedPreemptiveDispatchTesting"]),
    // The reference model of the rules and its random sequences, which every engine's tests
    // check against: the in-process driver here, the PostgreSQL store in Postgres/.
    .library(
      name: "DelayedPreemptiveDispatchModel", targets: ["DelayedPreemptiveDispatchModel"]),
  ],
  targets: [
    .target(name: "DelayedPreemptiveDispatch"),
    .target(
      name: "DelayedPreemptiveDispatchTesting",
      dependencies: ["DelayedPreemptiveDispatch"]
    ),
    .target(
      name: "DelayedPreemptiveDispatchModel",
      dependencies: ["DelayedPreemptiveDispatch", "DelayedPreemptiveDispatchTesting"]
    ),
    .executableTarget(
      name: "dpd-demo",
      // The testing module for its seeded generator: `--seed` replays the same arrivals.
      dependencies: ["DelayedPreemptiveDispatch", "DelayedPreemptiveDispatchTesting"]
    ),
    // Breaks one precondition per run, so that tests can check the message from outside.
    .executableTarget(
      name: "dpd-precondition-probe",
      dependencies: ["DelayedPreemptiveDispatch", "DelayedPreemptiveDispatchTesting"]
    ),
    // Measures a keyed instance's live heap alone in its process, for KeyedMemoryTests.
    .executableTarget(
      name: "dpd-memory-probe",
      dependencies: [
        "DelayedPreemptiveDispatch", "DelayedPreemptiveDispatchTesting", "DPDHeapStatistics",
      ]
    ),
    // The client that scripts/instructions.sh counts instructions in (callgrind, release build).
    .executableTarget(
      name: "dpd-instructions",
      dependencies: ["DelayedPreemptiveDispatch"]
    ),
    // Reads the live heap (malloc's bytes in use) for the tests that check memory comes back.
    .target(name: "DPDHeapStatistics"),
    .testTarget(
      name: "DelayedPreemptiveDispatchTests",
      dependencies: [
        "DelayedPreemptiveDispatch", "DelayedPreemptiveDispatchTesting",
        "DelayedPreemptiveDispatchModel", "dpd-precondition-probe", "dpd-memory-probe",
        "DPDHeapStatistics",
      ]
    ),
    // Imports only the testing module, as the README's "Testing without sleeping" does.
    .testTarget(
      name: "DelayedPreemptiveDispatchTestingImportTests",
      dependencies: ["DelayedPreemptiveDispatchTesting"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
