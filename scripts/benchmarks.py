#!/usr/bin/env python3
"""Runs the Benchmarks package and regenerates BENCHMARKS.md and Benchmarks/results.svg.

    python3 scripts/benchmarks.py            # run every benchmark, then write both files
    python3 scripts/benchmarks.py --report   # rewrite both files from the last run's export
    python3 scripts/benchmarks.py --keyed    # run only the keyed workloads, and rewrite only
                                             # the "Keyed bursts" section of BENCHMARKS.md
    python3 scripts/benchmarks.py --keyed --report   # that section, from the last keyed run
    python3 scripts/benchmarks.py --stream   # run only the stream workloads, and rewrite only
                                             # the "Streams" section of BENCHMARKS.md
    python3 scripts/benchmarks.py --stream --report  # that section, from the last stream run
    python3 scripts/benchmarks.py --storm    # run only the Storm target, and rewrite only the
                                             # storm and tickets tables, the chart, and the
                                             # Targets rows that they feed

The run exports each benchmark's percentiles (histogramPercentiles) into Benchmarks/.results/,
next to machine.json, which records the machine at the start of the run. Every figure in the
report is a median (p50) of that run, except the fire-latency p99.
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "Benchmarks" / ".results"
KEYED_RESULTS = RESULTS / "keyed"
STREAM_RESULTS = RESULTS / "stream"
STORM_RESULTS = RESULTS / "storm"
# The section that scripts/actor-storm.sh writes: the actor storm's wall-clock guard.
ACTOR_STORM = ROOT / "Benchmarks" / "actor-storm.md"
REPORT = ROOT / "BENCHMARKS.md"
CHART = ROOT / "Benchmarks" / "results.svg"

CONTENDERS = [
    ("queue", "`DelayedPreemptiveDispatchQueue`"),
    ("actor", "`DelayedPreemptiveActor` (ContinuousClock)"),
    ("seed-style", "seed style: DispatchGroup + asyncAfter per call"),
    ("work-item", "DispatchWorkItem: cancel, then asyncAfter"),
    ("task-per-call", "actor with a Task per call"),
    ("debounce", "AsyncAlgorithms `debounce(for:)`"),
    ("lower-bound", "lower bound: locked store, no timer"),
]
# Nanoseconds between the start of arming and the shared deadline, in the due-at-once workload.
DUE_ARMING_BUDGET = 20e9
KEYED_CONTENDERS = [
    ("keyed-queue", "`KeyedDelayedPreemptiveDispatchQueue`"),
    ("keyed-actor", "`KeyedDelayedPreemptiveActor` (ContinuousClock), each call awaited from one task"),
    ("queue-dictionary", "locked Dictionary of `DelayedPreemptiveDispatchQueue`"),
    ("task-per-key", "locked Dictionary of sleeping `Task`s, cancelled and replaced"),
    ("lower-bound", "lower bound: locked Dictionary of (key, deadline, value), no timer"),
]
STREAM_CONTENDERS = [
    ("debounced", "`debounced(for:)`"),
    ("async-algorithms", "AsyncAlgorithms `debounce(for:)`"),
    ("lower-bound", "lower bound: a plain loop keeping the last element and its deadline"),
]
SHORT = {
    "queue": "GCD queue",
    "actor": "actor",
    "seed-style": "seed style",
    "work-item": "DispatchWorkItem",
    "task-per-call": "Task per call",
    "debounce": "debounce",
    "lower-bound": "lower bound",
}


def shell(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine():
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        load = "unknown"
    return {
        "nproc": shell(["nproc"]),
        "cpu": model,
        "os": f"{platform.system()} {platform.release()}",
        "swift": shell(["swift", "--version"]).splitlines()[0] if shell(["swift", "--version"]) else "unknown",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": load,
    }


def run(results=RESULTS, targets=()):
    results.mkdir(parents=True, exist_ok=True)
    for old in results.glob("*.tsv"):
        old.unlink()
    info = machine()
    (results / "machine.json").write_text(json.dumps(info, indent=2) + "\n")
    command = [
        "swift", "package", "--package-path", str(ROOT / "Benchmarks"),
        "--allow-writing-to-directory", str(results),
        "benchmark", "--format", "histogramPercentiles", "--path", str(results), "--no-progress",
    ]
    for target in targets:
        command += ["--target", target]
    print("$ " + " ".join(command), flush=True)
    status = subprocess.run(command).returncode
    info["failed"] = status != 0
    (results / "machine.json").write_text(json.dumps(info, indent=2) + "\n")
    if status != 0:
        print("warning: a benchmark failed; the report marks its figures n/a", file=sys.stderr)


def load(directory=RESULTS):
    """{(workload, contender): {metric: {percentile: value}}} from the exported TSV files."""
    results = {}
    for path in directory.glob("*.histogram.percentiles.tsv"):
        parts = path.name.split(".")
        name, metric = parts[2], parts[3]
        workload, _, contender = name.partition(":")
        lines = path.read_text().splitlines()
        scale = unit_scale(lines[0])
        percentiles = {}
        for line in lines[1:]:
            percentile, value = line.split("\t")
            percentiles[int(percentile)] = float(value) * scale
        results.setdefault((workload, contender), {})[metric] = percentiles
    return results


def unit_scale(header):
    """The factor back to plain nanoseconds or counts, from a header such as `Malloc (total) (K) *`."""
    units = {"(ns)": 1, "(us)": 1e3, "(μs)": 1e3, "(ms)": 1e6, "(s)": 1e9,
             "(#)": 1, "(K)": 1e3, "(M)": 1e6, "(G)": 1e9}
    for unit, scale in units.items():
        if unit in header:
            return scale
    return 1


class Results:
    def __init__(self, raw):
        self.raw = raw

    def value(self, workload, contender, metric, percentile=50):
        try:
            return self.raw[(workload, contender)][metric][percentile]
        except KeyError:
            return None

    def per_call(self, workload, contender, metric):
        total = self.value(workload, contender, metric)
        calls = self.value(workload, contender, "calls")
        if total is None or not calls:
            return None
        return total / calls


def fmt(value, digits=1, unit=""):
    if value is None:
        return "n/a"
    if value >= 100:
        return f"{value:,.0f}{unit}"
    return f"{value:.{digits}f}{unit}"


def ratio(value, base):
    if value is None or not base:
        return "n/a"
    return f"{value / base:.2f}×" if value / base < 10 else f"{value / base:,.0f}×"


def storm_table(results):
    rows = [
        "| contender | ns per call, 1 thread | × lower bound | ns per call, 2 threads | × lower bound | mallocs per call |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    base1 = results.per_call("storm-1-thread", "lower-bound", "wallClock")
    base2 = results.per_call("storm-2-thread", "lower-bound", "wallClock")
    for key, label in CONTENDERS:
        one = results.per_call("storm-1-thread", key, "wallClock")
        two = results.per_call("storm-2-thread", key, "wallClock")
        mallocs = results.per_call("storm-1-thread", key, "mallocCountTotal")
        rows.append(
            f"| {label} | {fmt(one)} | {ratio(one, base1)} | {fmt(two)} | {ratio(two, base2)} "
            f"| {fmt(mallocs, 2)} |")
    return "\n".join(rows)


def memory_table(results):
    rows = [
        "| contender | resident growth | mallocs per call |",
        "|---|--:|--:|",
    ]
    for key, label in CONTENDERS:
        resident = results.value("memory", key, "residentGrowthBytes")
        mallocs = results.per_call("memory", key, "mallocCountTotal")
        rows.append(f"| {label} | {megabytes(resident)} | {fmt(mallocs, 2)} |")
    return "\n".join(rows)


def megabytes(value):
    return "n/a" if value is None else f"{value / 1e6:,.2f} MB"


def fan_out_table(results):
    rows = [
        "| contender | arm, ns per instance | × lower bound | all fired after (ms) | mallocs per instance |",
        "|---|--:|--:|--:|--:|",
    ]
    base = results.per_call("fan-out", "lower-bound", "armNanoseconds")
    for key, label in CONTENDERS:
        arm = results.per_call("fan-out", key, "armNanoseconds")
        fired = results.value("fan-out", key, "wallClock")
        mallocs = results.per_call("fan-out", key, "mallocCountTotal")
        fired_ms = None if fired is None else fired / 1e6
        rows.append(
            f"| {label} | {fmt(arm)} | {ratio(arm, base)} | {fmt(fired_ms)} | {fmt(mallocs, 2)} |")
    return "\n".join(rows)


def threads_table(results):
    rows = ["| target | threads used | all ran after (ms) |", "|---|--:|--:|"]
    for key, label in [("default-target", "default (`target: nil`)"), ("global-target", "`.global()`")]:
        threads = results.value("threads", key, "threadsUsed")
        fired = results.value("threads", key, "wallClock")
        rows.append(f"| {label} | {fmt(threads, 0)} | {fmt(None if fired is None else fired / 1e6)} |")
    return "\n".join(rows)


def latency_table(results):
    rows = ["| contender | overshoot p50 (µs) | overshoot p99 (µs) |", "|---|--:|--:|"]
    labels = [("clock-nanosleep", "baseline: `clock_nanosleep` of 10 ms")] + [
        item for item in CONTENDERS if item[0] != "lower-bound"]
    for key, label in labels:
        p50 = results.value("latency", key, "overshootNanoseconds", 50)
        p99 = results.value("latency", key, "overshootNanoseconds", 99)
        rows.append(f"| {label} | {fmt(micro(p50))} | {fmt(micro(p99))} |")
    return "\n".join(rows)


def micro(value):
    return None if value is None else value / 1e3


def tickets_table(results):
    rows = [
        "| contender | mallocs per call, tickets kept | discarded | ns per call, kept | discarded |",
        "|---|--:|--:|--:|--:|",
    ]
    for key in ["queue", "actor"]:
        kept = results.per_call("tickets-kept", key, "mallocCountTotal")
        dropped = results.per_call("tickets-discarded", key, "mallocCountTotal")
        kept_ns = results.per_call("tickets-kept", key, "wallClock")
        dropped_ns = results.per_call("tickets-discarded", key, "wallClock")
        rows.append(
            f"| {dict(CONTENDERS)[key]} | {fmt(kept, 4)} | {fmt(dropped, 4)} "
            f"| {fmt(kept_ns)} | {fmt(dropped_ns)} |")
    return "\n".join(rows)


def targets(results):
    """(target, measured, holds) for each speed and memory target."""
    checks = []
    queue = results.per_call("storm-1-thread", "queue", "wallClock")
    bound = results.per_call("storm-1-thread", "lower-bound", "wallClock")
    seed = results.per_call("storm-1-thread", "seed-style", "wallClock")
    actor = results.per_call("storm-1-thread", "actor", "wallClock")
    tasks = results.per_call("storm-1-thread", "task-per-call", "wallClock")
    heap = results.value("memory", "queue", "residentGrowthBytes")
    p99 = results.value("latency", "queue", "overshootNanoseconds", 99)
    kept = results.per_call("tickets-kept", "queue", "mallocCountTotal")
    dropped = results.per_call("tickets-discarded", "queue", "mallocCountTotal")
    kept_actor = results.per_call("tickets-kept", "actor", "mallocCountTotal")
    dropped_actor = results.per_call("tickets-discarded", "actor", "mallocCountTotal")

    def check(name, measured, holds):
        checks.append((name, measured, "holds" if holds else "**missed**"))

    if None not in (queue, bound):
        check("GCD queue ≤ 1.5× the lower bound per call (1 thread)",
              f"{queue / bound:.2f}×", queue <= 1.5 * bound)
    if None not in (queue, seed):
        check("GCD queue ≥ 20× faster than the seed style (1 thread)",
              f"{seed / queue:,.0f}×", seed >= 20 * queue)
    if heap is not None:
        check("memory grows < 4 MB with 10⁶ pending (GCD queue)", megabytes(heap), heap < 4e6)
    if None not in (actor, tasks):
        check("actor ≥ 5× faster per call than Task per call (1 thread)",
              f"{tasks / actor:.1f}×", tasks >= 5 * actor)
    guard = actor_storm_target()
    if guard is not None:
        checks.append(guard)
    if p99 is not None:
        check("fire latency p99 < 2 ms (GCD queue)", f"{p99 / 1e3:,.0f} µs", p99 < 2e6)
    if None not in (kept, dropped, kept_actor, dropped_actor):
        extra = max(kept - dropped, kept_actor - dropped_actor)
        check("keeping tickets adds 0 mallocs per call (queue and actor)",
              f"{kept - dropped:+.4f} queue, {kept_actor - dropped_actor:+.4f} actor",
              extra < 0.001)
    rows = ["| target | measured | verdict |", "|---|--:|---|"]
    rows += [f"| {name} | {measured} | {holds} |" for name, measured, holds in checks]
    return "\n".join(rows)


# The library's keyed contenders, each held to the keyed targets; the actor's rows follow the
# queue's, target by target.
KEYED_LIBRARY = [("keyed-queue", "queue"), ("keyed-actor", "actor")]


def keyed_targets(results):
    """(target, measured, verdict) rows for the keyed targets, for the keyed queue and the keyed
    actor."""
    arm_bound = results.per_call("keyed-arm", "lower-bound", "armNanoseconds")
    arm_queues = results.per_call("keyed-arm", "queue-dictionary", "armNanoseconds")
    update_bound = results.per_call("keyed-resubmit", "lower-bound", "wallClock")
    p99_single = results.value("keyed-latency", "single-queue", "overshootNanoseconds", 99)
    figures = {
        key: {
            "arm": results.per_call("keyed-arm", key, "armNanoseconds"),
            "update": results.per_call("keyed-resubmit", key, "wallClock"),
            "memory": results.per_call("keyed-memory", key, "residentGrowthBytes"),
            "drain": results.value("keyed-due", key, "drainNanoseconds"),
            "p99": results.value("keyed-latency", key, "overshootNanoseconds", 99),
        }
        for key, _ in KEYED_LIBRARY
    }
    checks = []

    def check(name, measured, holds):
        checks.append((name, measured, "holds" if holds else "**missed**"))

    def each(target, make):
        """One row per library contender with figures: make(figures) -> (measured, holds)."""
        for key, short in KEYED_LIBRARY:
            row = make(figures[key])
            if row is not None:
                check(f"{short}: {target}", *row)

    each("arming a new key ≤ 3× the lower bound's insert",
         lambda f: None if None in (f["arm"], arm_bound)
         else (f"{f['arm'] / arm_bound:.2f}×", f["arm"] <= 3 * arm_bound))
    each("arming a new key ≥ 10× faster than the dictionary of queues",
         lambda f: None if None in (f["arm"], arm_queues)
         else (f"{arm_queues / f['arm']:,.1f}×", arm_queues >= 10 * f["arm"]))
    each("re-submitting a pending key ≤ 2× the lower bound's update",
         lambda f: None if None in (f["update"], update_bound)
         else (f"{f['update'] / update_bound:.2f}×", f["update"] <= 2 * update_bound))
    each("≤ 200 B of resident memory per pending key (`Value == Void`)",
         lambda f: None if f["memory"] is None
         else (f"{f['memory']:,.0f} B", f["memory"] <= 200))
    each("10⁶ keys due at once: all tasks have run within 2 s",
         lambda f: None if f["drain"] is None
         else (f"{f['drain'] / 1e6:,.0f} ms", f["drain"] <= 2e9))
    each("fire lateness p99 with 10⁶ keys pending within 2 ms of the single queue's",
         lambda f: None if None in (f["p99"], p99_single)
         else (f"{(f['p99'] - p99_single) / 1e3:+,.0f} µs", f["p99"] - p99_single <= 2e6))
    rows = ["| target | measured | verdict |", "|---|--:|---|"]
    rows += [f"| {name} | {measured} | {holds} |" for name, measured, holds in checks]
    return "\n".join(rows)


def keyed_speed_table(results):
    rows = [
        "| contender | arm a new key, ns | × lower bound | mallocs | re-submit a pending key, ns "
        "| × lower bound | mallocs |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    arm_base = results.per_call("keyed-arm", "lower-bound", "armNanoseconds")
    update_base = results.per_call("keyed-resubmit", "lower-bound", "wallClock")
    for key, label in KEYED_CONTENDERS:
        arm = results.per_call("keyed-arm", key, "armNanoseconds")
        arm_mallocs = results.per_call("keyed-arm", key, "mallocCountTotal")
        update = results.per_call("keyed-resubmit", key, "wallClock")
        update_mallocs = results.per_call("keyed-resubmit", key, "mallocCountTotal")
        rows.append(
            f"| {label} | {fmt(arm)} | {ratio(arm, arm_base)} | {fmt(arm_mallocs, 2)} "
            f"| {fmt(update)} | {ratio(update, update_base)} | {fmt(update_mallocs, 2)} |")
    return "\n".join(rows)


def keyed_scale_table(results):
    rows = [
        "| contender | resident growth, 10⁶ pending keys | per key | 10⁶ due at once: all ran after "
        "(ms) | lateness p50 (µs) | p99 (µs) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    labels = KEYED_CONTENDERS + [
        ("single-queue", "baseline: one `DelayedPreemptiveDispatchQueue`, nothing else pending")]
    late_armers = False
    for key, label in labels:
        resident = results.value("keyed-memory", key, "residentGrowthBytes")
        per_key = results.per_call("keyed-memory", key, "residentGrowthBytes")
        drain = results.value("keyed-due", key, "drainNanoseconds")
        drain_text = fmt(None if drain is None else drain / 1e6)
        arm = results.value("keyed-arm", key, "armNanoseconds")
        if drain is not None and arm is not None and arm > DUE_ARMING_BUDGET:
            drain_text += " †"
            late_armers = True
        p50 = results.value("keyed-latency", key, "overshootNanoseconds", 50)
        p99 = results.value("keyed-latency", key, "overshootNanoseconds", 99)
        rows.append(
            f"| {label} | {megabytes(resident)} | {fmt(per_key, 0, ' B')} "
            f"| {drain_text} | {fmt(micro(p50))} | {fmt(micro(p99))} |")
    if late_armers:
        rows.append("")
        rows.append(
            "† Arming 10⁶ keys takes this contender longer than the 20 s before the shared deadline "
            "(see the arm column above), so most of its tasks ran while it was still arming; the "
            "figure counts only what was left when arming ended.")
    return "\n".join(rows)


def keyed_section(results, info):
    return f"""## Keyed bursts

Debouncing per key with `Value == Void` and `Int` keys, one thread submitting; each workload is
one iteration in a process of its own. The keyed queue and the keyed actor (each call awaited
from one task, as a user calls it) are measured against what a service writes without them, a
locked `Dictionary` of `DelayedPreemptiveDispatchQueue` (one made per new key, never pruned) or
of sleeping `Task`s (cancelled and replaced on every submission), and against the lower bound,
a `Dictionary` of (key, deadline, value) under one `pthread_mutex_t` with no timer. Measured on {info['date']}, load average at the start: {info['load']}{"; **a benchmark failed in this run**" if info.get("failed") else ""}.
Reproduce with `python3 scripts/benchmarks.py --keyed` (about 5 minutes on 2 cores).

- *Arm*: 10⁶ distinct keys, each submitted once with a 60 s delay; ns per key, of the loop.
- *Re-submit*: 10⁴ keys pending, then 10⁶ submissions cycling over them; ns per call.
- *Memory*: growth of the resident set while 10⁶ keys are pending.
- *Due at once*: 10⁶ keys armed for one instant 20 s ahead (or as soon as arming ends, when
  it takes longer); time from that instant until every task has run, counted down under a lock.
- *Lateness*: with 10⁶ keys pending for 60 s, 200 times a new key with a 10 ms delay; how long
  after its deadline its task started. The baseline is the same probe on a single queue.

The keyed queue and the keyed actor arm one timer for the whole instance, whatever the number
of keys (by construction: their driver holds one armed timer and a heap of deadlines); the
dictionary of queues arms one per key, and the `Task`s sleep one each. The targets were set for
the keyed queue; the actor is held to the same ones, row by row after the queue.

{keyed_targets(results)}

{keyed_speed_table(results)}

{keyed_scale_table(results)}
{keyed_findings()}"""


def keyed_findings():
    """Benchmarks/keyed-findings.md, the analysis of the keyed figures, if present."""
    path = ROOT / "Benchmarks" / "keyed-findings.md"
    return "\n" + path.read_text() if path.exists() else ""


def stream_targets(results):
    """(target, measured, verdict) rows for the stream targets."""
    rows = ["| target | measured | verdict |", "|---|--:|---|"]

    def per(workload, key, metric="wallClock"):
        return results.per_call(workload, key, metric)

    def check(name, measured, holds):
        verdict = "n/a" if holds is None else ("holds" if holds else "**missed**")
        rows.append(f"| {name} | {measured} | {verdict} |")

    for workload, base in (("stream-buffered", "`AsyncStream`, buffered"),
                           ("stream-sync-base", "a base that never suspends")):
        ours, theirs = per(workload, "debounced"), per(workload, "async-algorithms")
        value = ours / theirs if ours and theirs else None
        check(f"≤ 0.2× async-algorithms' time per element ({base})",
              "n/a" if value is None else f"{value:.2f}×", None if value is None else value <= 0.2)
    for workload, base in (("stream-buffered", "`AsyncStream`, buffered"),
                           ("stream-sync-base", "a base that never suspends")):
        ours = per(workload, "debounced", "mallocCountTotal")
        floor = per(workload, "lower-bound", "mallocCountTotal")
        extra = ours - floor if ours is not None and floor is not None else None
        check(f"0 mallocs per element beyond the base's own ({base})",
              "n/a" if extra is None else f"{extra:+.4f}",
              None if extra is None else extra < 0.001)
    return "\n".join(rows)


def stream_speed_table(results):
    rows = [
        "| contender | base | ns per element | × lower bound | × async-algorithms | mallocs per element |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for workload, base in (("stream-buffered", "`AsyncStream`, buffered"),
                           ("stream-sync-base", "never suspends")):
        floor = results.per_call(workload, "lower-bound", "wallClock")
        theirs = results.per_call(workload, "async-algorithms", "wallClock")
        for key, label in STREAM_CONTENDERS:
            value = results.per_call(workload, key, "wallClock")
            mallocs = results.per_call(workload, key, "mallocCountTotal")
            rows.append(f"| {label} | {base} | {fmt(value)} | {ratio(value, floor)} | "
                        f"{ratio(value, theirs)} | {fmt(mallocs, 4)} |")
    return "\n".join(rows)


def stream_memory_table(results):
    rows = ["| contender | resident growth |", "|---|--:|"]
    for key, label in STREAM_CONTENDERS[:2]:
        growth = results.value("stream-slow-consumer", key, "residentGrowthBytes")
        rows.append(f"| {label} | {megabytes(growth)} |")
    return "\n".join(rows)


def stream_section(results, info):
    return f"""## Streams

`AsyncSequence.debounced(for:)` against swift-async-algorithms' `debounce(for:)` and a lower
bound (a plain `for await` loop over the same base that keeps the last element and its
deadline, `max(deadline, now + interval)`, with no timer), all on `ContinuousClock` with a 1 ms
quiet period, measured in one run on {info['date']} (load average at the start: {info['load']}).
Reproduce with `python3 scripts/benchmarks.py --stream` (about 2 minutes on 2 cores).

- *`AsyncStream`, buffered*: 10⁶ `Int`s yielded into an unbounded `AsyncStream` and finished
  before the measurement, then read through the contender until the consumer has the last
  element (the base's end emits it at once). The whole run is one burst.
- *never suspends*: the same elements from swift-async-algorithms' `(0..<n).async`. An
  `AsyncStream` suspends and resumes its reader for every element, buffered or not, and that
  costs more than either debounce; this base isolates the contender's own cost.
- *Slow consumer*: the 10⁶ elements in chunks of 1,000, one chunk every 0.5 ms, with a 100 µs
  quiet period (so every chunk ends a burst), and a consumer that takes 2 s per element it
  receives, longer than the whole run; growth of the resident set once the last chunk is
  yielded, in one iteration in a process of its own.

{stream_targets(results)}

{stream_speed_table(results)}

{stream_memory_table(results)}
{stream_findings()}"""


def stream_findings():
    """Benchmarks/stream-findings.md, the analysis of the stream figures, if present."""
    path = ROOT / "Benchmarks" / "stream-findings.md"
    return "\n" + path.read_text() if path.exists() else ""


def report(results, info):
    return f"""# Benchmarks

Generated by `python3 scripts/benchmarks.py` from one run of
`swift package --package-path Benchmarks benchmark`; every contender of a table was measured in
that same run, on the same workload. Figures are medians over the iterations of the run unless
marked p99; ratios are against the lower bound measured alongside. Do not compare figures across
machines: compare the ratios.

Machine: {info['nproc']} cores, {info['cpu']}; {info['os']}; {info['swift']}.
Run on {info['date']}; load average at the start: {info['load']}.
{"**A benchmark failed in this run; its figures read n/a.**" if info.get("failed") else ""}

![ns per call, log scale](Benchmarks/results.svg)

## Targets

{targets(results)}

## Preemption storm

10⁶ `delay` calls on one instance, each preempting the last, from 1 thread or from 2 threads
(2 concurrent tasks for the actors), then one final call; measured until that final task has
run. Every contender uses a 1 ms delay, so the wait for the final deadline adds about 1 ns per
call to each of them. The lower bound stores (now + delay, task) under a `pthread_mutex_t` and
has no timer: after the storm it sleeps until the deadline and runs the task itself.

{storm_table(results)}

## Memory with 10⁶ pending submissions

10⁶ calls with a 1 s delay on one instance; growth of the resident set, read right after the
last call returned, in one iteration in a fresh process (each benchmark runs in its own), so
that no page freed earlier hides growth. A contender whose calls take longer than 1 s in all
has already fired some of its per-call timers by then.

{memory_table(results)}

## Fan-out

10⁵ instances, made before the measurement, each armed once with a 10 ms delay: the time of the
arming loop, and the time from its start until every task has run.

{fan_out_table(results)}

## Threads

10⁴ library queues, made before the measurement, each armed once with a 10 ms delay: how many
threads their tasks ran on, and the time until every task had run, with the default target and
with `.global()`. The default must match `.global()`: a serial queue with no target would be an
overcommit queue, with a thread of its own whenever it has work.

{threads_table(results)}

## Fire latency

One 10 ms delay on a fresh instance: how long after the deadline the task started, over 200
samples, next to a plain `clock_nanosleep` of 10 ms. The lower bound has no timer and is left
out.

{latency_table(results)}

## Tickets

The 1-thread storm on the library's queue and actor, keeping every `DelayTicket` in an array
reserved beforehand, or discarding them.

{tickets_table(results)}

{keyed_section(results, info)}
{stream_section(results, info)}
{findings()}{actor_storm()}{instructions()}## Reproduce

```
python3 scripts/benchmarks.py            # runs everything (about 10 minutes on 2 cores)
python3 scripts/benchmarks.py --report   # rewrites this file and the chart from that run
python3 scripts/benchmarks.py --keyed    # reruns only the keyed workloads and their section
python3 scripts/benchmarks.py --stream   # reruns only the stream workloads and their section
bash scripts/postgres-bench.sh           # the PostgreSQL section: 3 runs beside the peers (15 min)
bash scripts/instructions.sh --markdown Benchmarks/instructions.md   # the instruction counts
bash scripts/actor-storm.sh --markdown Benchmarks/actor-storm.md     # the actor storm's guard
python3 scripts/benchmarks.py --storm    # reruns only the storm and tickets tables
```
"""


def actor_storm():
    """Benchmarks/actor-storm.md, the section that scripts/actor-storm.sh writes, if present."""
    return ACTOR_STORM.read_text() + "\n" if ACTOR_STORM.exists() else ""


def actor_storm_target():
    """(target, measured, verdict) from the guard's section (a comment line), if present."""
    if not ACTOR_STORM.exists():
        return None
    for line in ACTOR_STORM.read_text().splitlines():
        if line.startswith("<!-- target: ") and line.endswith(" -->"):
            name, measured, verdict = line[len("<!-- target: "):-len(" -->")].split(" | ")
            return (name, measured, verdict if verdict == "holds" else "**missed**")
    return None


def findings():
    """Benchmarks/findings.md, the analysis of missed targets, if present."""
    path = ROOT / "Benchmarks" / "findings.md"
    return path.read_text() + "\n" if path.exists() else ""


def instructions():
    """Benchmarks/instructions.md, the section that scripts/instructions.sh writes, if present."""
    path = ROOT / "Benchmarks" / "instructions.md"
    return path.read_text() + "\n" if path.exists() else ""


def chart(results):
    """A horizontal bar chart of ns per call in the storm, on a log scale, as SVG text."""
    series = [("storm-1-thread", "1 thread", "#3b6ea8"), ("storm-2-thread", "2 threads", "#e08a2c")]
    values = {(w, k): results.per_call(w, k, "wallClock") for w, _, _ in series for k, _ in CONTENDERS}
    known = [v for v in values.values() if v]
    low = 10 ** math.floor(math.log10(min(known))) if known else 1
    high = 10 ** math.ceil(math.log10(max(known))) if known else 10
    left, right, top, row = 150, 640, 56, 40
    width, height = 760, top + row * len(CONTENDERS) + 44

    def x(value):
        return left + (right - left) * (math.log10(value) - math.log10(low)) / (
            math.log10(high) - math.log10(low))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        '<text x="20" y="24" font-size="15" font-weight="bold">'
        'Preemption storm: ns per delay call (median, log scale)</text>',
    ]
    decade = low
    while decade <= high:
        out.append(f'<line x1="{x(decade):.1f}" y1="{top - 8}" x2="{x(decade):.1f}" '
                   f'y2="{height - 36}" stroke="#ccc"/>')
        out.append(f'<text x="{x(decade):.1f}" y="{height - 20}" text-anchor="middle">'
                   f'{time_label(decade)}</text>')
        decade *= 10
    for index, (key, _) in enumerate(CONTENDERS):
        y = top + index * row
        out.append(f'<text x="{left - 8}" y="{y + 19}" text-anchor="end">{SHORT[key]}</text>')
        for offset, (workload, _, colour) in enumerate(series):
            value = values[(workload, key)]
            if not value:
                continue
            bar_y = y + 4 + offset * 15
            out.append(f'<rect x="{left}" y="{bar_y}" width="{x(value) - left:.1f}" height="13" '
                       f'fill="{colour}"/>')
            out.append(f'<text x="{x(value) + 4:.1f}" y="{bar_y + 11}">{fmt(value)}</text>')
    for offset, (_, label, colour) in enumerate(series):
        lx = 470 + offset * 100
        out.append(f'<rect x="{lx}" y="34" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16}" y="44">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def time_label(nanoseconds):
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if nanoseconds >= size:
            return f"{nanoseconds / size:g} {unit}"
    return f"{nanoseconds:g} ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true",
                        help="only rewrite the report and chart from Benchmarks/.results")
    parser.add_argument("--keyed", action="store_true",
                        help="only the keyed workloads: rewrite only their section of the report")
    parser.add_argument("--stream", action="store_true",
                        help="only the stream workloads: rewrite only their section of the report")
    parser.add_argument("--storm", action="store_true",
                        help="only the Storm target: rewrite only its tables, rows and chart")
    arguments = parser.parse_args()
    os.chdir(ROOT)
    if arguments.keyed:
        keyed(run_first=not arguments.report)
        return
    if arguments.stream:
        stream(run_first=not arguments.report)
        return
    if arguments.storm:
        storm(run_first=not arguments.report)
        return
    if not arguments.report:
        run()
    info = json.loads((RESULTS / "machine.json").read_text())
    results = Results(load())
    if not results.raw:
        sys.exit(f"no exported results in {RESULTS}")
    REPORT.write_text(report(results, info) + preserved_sections())
    CHART.write_text(chart(results))
    print(f"wrote {REPORT.relative_to(ROOT)} and {CHART.relative_to(ROOT)}")


def preserved_sections():
    """Sections written by other runs (the Postgres package's figures), kept as they are when the
    main report is rewritten."""
    if not REPORT.exists():
        return ""
    text = REPORT.read_text()
    start = text.find("## Across replicas (PostgreSQL)")
    return "\n" + text[start:] if start >= 0 else ""


def rerun_section(run_first, target, results_dir, heading, make_section):
    """Runs one benchmark target alone (into `results_dir`) and replaces the section of
    BENCHMARKS.md under `heading` with its figures, leaving every other section as it is."""
    if run_first:
        run(results_dir, [target])
    info = json.loads((results_dir / "machine.json").read_text())
    results = Results(load(results_dir))
    if not results.raw:
        sys.exit(f"no exported results in {results_dir}")
    section = make_section(results, info)
    text = REPORT.read_text()
    start = text.find(heading)
    if start >= 0:
        end = text.find("\n## ", start)
        text = text[:start] + section + (text[end:] if end >= 0 else "")
    else:
        anchor = text.find("## What the profiles found")
        anchor = anchor if anchor >= 0 else text.find("## Reproduce")
        text = text[:anchor] + section + "\n" + text[anchor:]
    REPORT.write_text(text)
    print(f"wrote the {heading[3:]} section of {REPORT.relative_to(ROOT)}")


def replace_table(text, heading, table):
    """`text` with the first table after `heading` replaced by `table`."""
    start = text.index(heading)
    first = text.index("\n|", start) + 1
    end = first
    while end < len(text) and text[end] == "|":
        end = text.index("\n", end) + 1
    return text[:first] + table + "\n" + text[end:]


def storm(run_first):
    """The Storm target alone (Benchmarks/.results/storm): the storm and tickets tables, the
    chart, and the Targets rows measured from them, with a note of when; every other figure
    stays as the last full run wrote it."""
    if run_first:
        run(STORM_RESULTS, ["Storm"])
    info = json.loads((STORM_RESULTS / "machine.json").read_text())
    results = Results(load(STORM_RESULTS))
    if not results.raw:
        sys.exit(f"no exported results in {STORM_RESULTS}")
    text = REPORT.read_text()
    text = replace_table(text, "## Preemption storm", storm_table(results))
    text = replace_table(text, "## Tickets", tickets_table(results))
    # The Targets rows that this run measured replace theirs; the others stay.
    fresh = {line.split(" | ")[0]: line for line in targets(results).splitlines()[2:]}
    start = text.index("## Targets")
    first = text.index("\n|", start) + 1
    end = first
    rows = []
    while end < len(text) and text[end] == "|":
        line_end = text.index("\n", end)
        line = text[end:line_end]
        rows.append(fresh.pop(line.split(" | ")[0], line))
        end = line_end + 1
    rows += fresh.values()
    text = text[:first] + "\n".join(rows) + "\n" + text[end:]
    note = (f"The storm and tickets tables, the chart and the Targets rows measured from them were "
            f"re-measured alone on {info['date']}, load average at the start: {info['load']} "
            f"(`python3 scripts/benchmarks.py --storm`{', a benchmark failed' if info.get('failed') else ''}); "
            f"the other figures are from the run above.")
    note = "\n".join(textwrap.wrap(note, 100, break_on_hyphens=False))
    marker = "The storm and tickets tables, the chart and the Targets rows"
    if marker in text:
        begin = text.index(marker)
        text = text[:begin] + note + text[text.index("\n\n", begin):]
    else:
        anchor = text.index("\n\n", text.index("load average at the start:")) + 1
        text = text[:anchor] + note + "\n" + text[anchor:]
    # The guard's section, as scripts/actor-storm.sh last wrote it, before the instruction counts.
    heading = "## The actor storm, by wall clock"
    if heading in text:
        start = text.index(heading)
        text = text[:start] + text[text.index("\n## ", start) + 1:]
    if ACTOR_STORM.exists():
        anchor = text.index("## Instruction counts")
        text = text[:anchor] + actor_storm() + text[anchor:]
    REPORT.write_text(text)
    CHART.write_text(chart(results))
    print(f"wrote the storm tables of {REPORT.relative_to(ROOT)} and {CHART.relative_to(ROOT)}")


def keyed(run_first):
    """The "Keyed bursts" section alone (Benchmarks/.results/keyed)."""
    rerun_section(run_first, "Keyed", KEYED_RESULTS, "## Keyed bursts", keyed_section)


def stream(run_first):
    """The "Streams" section alone (Benchmarks/.results/stream)."""
    rerun_section(run_first, "Stream", STREAM_RESULTS, "## Streams", stream_section)


if __name__ == "__main__":
    main()
