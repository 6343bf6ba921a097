import Benchmark
import BenchmarkSupport
import Contenders

// Streams: `debounced(for:)` against swift-async-algorithms' `debounce(for:)` and the lower bound
// (a plain loop over the stream that keeps the last element and its deadline, no timer).
//
// - stream-buffered: `elements` Ints already buffered in an unbounded `AsyncStream` (yielded,
//   then `finish()`, before the measurement), read through the contender; measured until the
//   consumer has received the last element, which the base's end emits at once. The base hands
//   over each element without suspending, so the figure is the contender's own cost. A 1 ms
//   quiet period, as in the storm: the whole run is one burst whose timer re-arms every
//   millisecond.
// - stream-live: the same, with the elements yielded by the benchmark's task while the
//   contender reads them, as fast as it can: the consumer suspends and is resumed for most
//   elements, so `AsyncStream`'s hand-over between tasks adds its cost to every contender.
// - stream-slow-consumer: the same elements in chunks of `chunk`, a chunk every `chunkGap`, with
//   a 100 µs quiet period, so that every chunk ends a burst; the consumer takes `consumerDelay`
//   per element it receives. Growth of the resident set once the last chunk is yielded, in one
//   iteration in a process of its own.

let elements = 1_000_000
let throughputInterval = Duration.milliseconds(1)
let chunk = 1_000
let chunkGap = Duration.microseconds(500)
let slowInterval = Duration.microseconds(100)
let consumerDelay = Duration.milliseconds(10)

let benchmarks: @Sendable () -> Void = {
  let throughput = Metrics.configuration(
    [.wallClock, .mallocCountTotal, Metrics.calls], warmup: 1, iterations: 10, seconds: 10)
  let live = Metrics.configuration(
    [.wallClock, .mallocCountTotal, Metrics.calls], warmup: 1, iterations: 5, seconds: 10)
  let once = Metrics.configuration(
    [Metrics.residentGrowthBytes, Metrics.calls], warmup: 0, iterations: 1, seconds: 30)
  for contender in StreamContender.allCases {
    Benchmark(contender.benchmarkName("stream-buffered"), configuration: throughput) {
      benchmark in
      await throughputRun(contender, buffered: true, benchmark: benchmark)
    }
    Benchmark(contender.benchmarkName("stream-live"), configuration: live) { benchmark in
      await throughputRun(contender, buffered: false, benchmark: benchmark)
    }
    guard contender != .lowerBound else { continue }
    Benchmark(contender.benchmarkName("stream-slow-consumer"), configuration: once) {
      benchmark in
      await slowConsumerRun(contender, benchmark: benchmark)
    }
  }
}

func throughputRun(_ contender: StreamContender, buffered: Bool, benchmark: Benchmark) async {
  let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
  func produce() {
    for element in 0..<elements { continuation.yield(element) }
    continuation.finish()
  }
  if buffered { produce() }
  benchmark.startMeasurement()
  let consumer = Task { await contender.consume(stream, interval: throughputInterval) }
  if !buffered { produce() }
  let last = await consumer.value
  benchmark.stopMeasurement()
  precondition(last == elements - 1, "\(contender) emitted \(String(describing: last)) last")
  benchmark.measurement(Metrics.calls, elements)
}

func slowConsumerRun(_ contender: StreamContender, benchmark: Benchmark) async {
  let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
  let consumer = Task {
    await contender.consume(stream, interval: slowInterval) { _ in
      try? await Task.sleep(for: consumerDelay)
    }
  }
  let before = ProcessMemory.residentBytes()
  for start in stride(from: 0, to: elements, by: chunk) {
    for element in start..<start + chunk { continuation.yield(element) }
    try? await Task.sleep(for: chunkGap)
  }
  let growth = ProcessMemory.residentBytes() - before
  benchmark.measurement(Metrics.residentGrowthBytes, max(0, growth))
  benchmark.measurement(Metrics.calls, elements)
  consumer.cancel()
  continuation.finish()
  _ = await consumer.value
}
