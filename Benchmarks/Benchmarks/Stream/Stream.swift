import Benchmark
import BenchmarkSupport
import Contenders

// Streams: `debounced(for:)` against swift-async-algorithms' `debounce(for:)` and the lower bound
// (a plain loop over the stream that keeps the last element and its deadline, no timer).
//
// - stream-throttle-sync-base: `throttled(for:)` against swift-async-algorithms'
//   `throttle(for:latest: true)` and a floor (a loop that emits when the interval has passed and
//   keeps the latest element otherwise, no timer), 10^6 elements from a base that never suspends,
//   a 1 ms interval: the cost per element of a throttle that mostly keeps the latest element.
//
// - stream-buffered: `elements` Ints already buffered in an unbounded `AsyncStream` (yielded,
//   then `finish()`, before the measurement), read through the contender; measured until the
//   consumer has received the last element, which the base's end emits at once. The base hands
//   over each element without suspending, so the figure is the contender's own cost. A 1 ms
//   quiet period, as in the storm: the whole run is one burst whose timer re-arms every
//   millisecond.
// - stream-sync-base: the same elements from a base that never suspends (swift-async-algorithms'
//   `(0..<n).async`): `AsyncStream` itself suspends and resumes its reader for every element,
//   even a buffered one, which costs more than a debounce; without it, the figure is the
//   contender's own cost per element.
// - stream-slow-consumer: the same elements in chunks of `chunk`, a chunk every `chunkGap`, with
//   a 100 µs quiet period, so that every chunk ends a burst; the consumer takes `consumerDelay`
//   per element it receives. Growth of the resident set once the last chunk is yielded, in one
//   iteration in a process of its own.

let elements = 1_000_000
let throughputInterval = Duration.milliseconds(1)
let chunk = 1_000
let chunkGap = Duration.microseconds(500)
let slowInterval = Duration.microseconds(100)
let consumerDelay = Duration.seconds(2)

let benchmarks: @Sendable () -> Void = {
  let throughput = Metrics.configuration(
    [.wallClock, .mallocCountTotal, Metrics.calls], warmup: 1, iterations: 10, seconds: 10)
  let once = Metrics.configuration(
    [Metrics.residentGrowthBytes, Metrics.calls], warmup: 0, iterations: 1, seconds: 30)
  for contender in StreamContender.allCases {
    Benchmark(contender.benchmarkName("stream-buffered"), configuration: throughput) {
      benchmark in
      await bufferedRun(contender, benchmark: benchmark)
    }
    Benchmark(contender.benchmarkName("stream-sync-base"), configuration: throughput) {
      benchmark in
      benchmark.startMeasurement()
      let last = await contender.consume(0..<elements, interval: throughputInterval)
      benchmark.stopMeasurement()
      precondition(last == elements - 1, "\(contender) emitted \(String(describing: last)) last")
      benchmark.measurement(Metrics.calls, elements)
    }
    guard contender != .lowerBound else { continue }
    Benchmark(contender.benchmarkName("stream-slow-consumer"), configuration: once) {
      benchmark in
      await slowConsumerRun(contender, benchmark: benchmark)
    }
  }
  for contender in ThrottleContender.allCases {
    Benchmark(contender.benchmarkName("stream-throttle-sync-base"), configuration: throughput) {
      benchmark in
      benchmark.startMeasurement()
      let (emitted, last) = await contender.consume(0..<elements, interval: throughputInterval)
      benchmark.stopMeasurement()
      precondition(last == elements - 1, "\(contender) emitted \(String(describing: last)) last")
      precondition(emitted >= 1, "\(contender) emitted nothing")
      benchmark.measurement(Metrics.calls, elements)
    }
  }
}

func bufferedRun(_ contender: StreamContender, benchmark: Benchmark) async {
  let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
  for element in 0..<elements { continuation.yield(element) }
  continuation.finish()
  benchmark.startMeasurement()
  let last = await contender.consume(stream, interval: throughputInterval)
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
