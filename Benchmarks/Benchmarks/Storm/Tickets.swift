import Benchmark
import BenchmarkSupport
import Contenders
import DelayedPreemptiveDispatch

// Tickets: the 1-thread storm on the library's queue and actor, once keeping every
// `DelayTicket` in an array reserved beforehand, once discarding them. The difference in
// mallocs per call is what keeping a ticket costs.

func registerTicketBenchmarks(_ configuration: Benchmark.Configuration) {
  for keep in [true, false] {
    let workload = keep ? "tickets-kept" : "tickets-discarded"
    Benchmark(Contender.queue.benchmarkName(workload), configuration: configuration) {
      benchmark in
      queueTickets(keep: keep, benchmark: benchmark)
    }
    Benchmark(Contender.actor.benchmarkName(workload), configuration: configuration) {
      benchmark in
      await actorTickets(keep: keep, benchmark: benchmark)
    }
  }
}

func queueTickets(keep: Bool, benchmark: Benchmark) {
  let queue = DelayedPreemptiveDispatchQueue(label: "bench.tickets")
  let latch = Latch()
  let noop = Contenders.noop
  var tickets: [DelayTicket] = []
  tickets.reserveCapacity(keep ? calls + 1 : 0)
  benchmark.startMeasurement()
  for _ in 0..<calls {
    let ticket = queue.delay(for: stormDelay, task: noop)
    if keep { tickets.append(ticket) }
  }
  let last = queue.delay(for: stormDelay) { latch.open() }
  if keep { tickets.append(last) }
  latch.wait()
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.calls, calls + 1)
  blackHole(tickets)
  blackHole(queue)  // a released queue cancels its pending task
}

func actorTickets(keep: Bool, benchmark: Benchmark) async {
  let actor = DelayedPreemptiveActor()
  let latch = Latch()
  let noop = asyncNoop
  var tickets: [DelayTicket] = []
  tickets.reserveCapacity(keep ? calls + 1 : 0)
  benchmark.startMeasurement()
  for _ in 0..<calls {
    let ticket = await actor.delay(stormDelay, task: noop)
    if keep { tickets.append(ticket) }
  }
  let last = await actor.delay(stormDelay) { latch.open() }
  if keep { tickets.append(last) }
  await latch.wait()
  benchmark.stopMeasurement()
  benchmark.measurement(Metrics.calls, calls + 1)
  blackHole(tickets)
  blackHole(actor)  // a released actor cancels its pending task
}
