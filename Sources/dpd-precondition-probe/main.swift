// Breaks one documented precondition, named by the first argument, so that a test can check
// from outside that the process stops with a message naming the parameter. A trap cannot be
// caught inside the test process itself.
import DelayedPreemptiveDispatch

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

let probes: [String: () -> Void] = [
  "delay-nan": { DelayedPreemptiveDispatchQueue(label: "probe").delay(.nan) {} },
  "delay-infinity": { DelayedPreemptiveDispatchQueue(label: "probe").delay(.infinity) {} },
  "lockout-max-failures": { _ = PasscodeLockout(maxFailures: 0) },
  "options-max-submissions": { _ = DelayOptions(maxSubmissions: 0) },
  "options-minimum-spacing": { _ = DelayOptions(minimumSpacing: .seconds(-1)) },
  "throttle-negative": { _ = DelayOptions.throttle(.milliseconds(-5)) },
  "keyed-actor-minimum-spacing": {
    var options = DelayOptions()
    options.minimumSpacing = .seconds(-2)
    _ = KeyedDelayedPreemptiveActor<Int, Int, ContinuousClock>(options: options) { _, _ in }
  },
  "queue-max-submissions": {
    var options = DelayOptions()
    options.maxSubmissions = -2
    _ = DelayedPreemptiveDispatchQueue(label: "probe", options: options)
  },
  "lockout-window": { _ = PasscodeLockout(window: .zero) },
  "lockout-duration": { _ = PasscodeLockout(lockoutDuration: .seconds(-1)) },
  "lockout-escalation-empty": { _ = PasscodeLockout(lockoutDurations: []) },
  "keyed-queue-max-concurrent": {
    _ = KeyedDelayedPreemptiveDispatchQueue<Int, Void>(maxConcurrentTasks: 0) { _, _ in }
  },
  "keyed-actor-max-concurrent": {
    _ = KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock>(maxConcurrentTasks: -1) { _, _ in }
  },
  "keyed-wait-inside-task": {
    let keyed = LockBox<KeyedDelayedPreemptiveDispatchQueue<Int, Void>?>(nil)
    keyed.withLock {
      $0 = KeyedDelayedPreemptiveDispatchQueue<Int, Void> { _, _ in
        keyed.withLock { $0 }?.wait()
      }
    }
    keyed.withLock { $0 }?.delay(1, 0)
    keyed.withLock { $0 }?.wait()
  },
  "wait-inside-task": {
    let queue = DelayedPreemptiveDispatchQueue(label: "probe")
    queue.delay(0) { queue.wait() }
    queue.wait()
  },
  "wait-main-target-on-main": {
    let queue = DelayedPreemptiveDispatchQueue(label: "probe", target: .main)
    queue.delay(0) {}
    queue.wait()
  },
  "pan-settle-delay": { _ = PanSettleDetector(settleDelay: .zero) {} },
  "pan-max-wait": { _ = PanSettleDetector(maxWait: .milliseconds(-5)) {} },
  "resources-quiet-period": { _ = AllResourcesLoadedSignal(quietPeriod: .seconds(-1)) },
  "resources-max-wait": { _ = AllResourcesLoadedSignal(maxWait: .zero) },
].merging(clockProbes()) { core, _ in core }

let name = CommandLine.arguments.dropFirst().first ?? ""
guard let probe = probes[name] else {
  print("usage: dpd-precondition-probe <\(probes.keys.sorted().joined(separator: "|"))>")
  exit(2)
}
probe()
print("probe \(name) returned without stopping")
