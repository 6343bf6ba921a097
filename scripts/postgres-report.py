#!/usr/bin/env python3
"""Writes the PostgreSQL figures of scripts/postgres-bench.sh into BENCHMARKS.md.

    python3 scripts/postgres-report.py .build-bench/postgres-run-*.jsonl

Each file is one run: JSON lines, one figure each, the first the load average at the run's start.
Every figure in the report is the median of the runs, with the spread (lowest to highest) beside
it; a ratio is taken within each run (both sides measured on the same server, minutes apart) and
then summarised the same way. The report replaces the text between the two markers of the
"Across replicas (PostgreSQL)" section and leaves the prose around them as it is.
"""
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- postgres-report: begin (written by scripts/postgres-report.py) -->"
END = "<!-- postgres-report: end -->"
OURS = "DelayedPreemptiveDispatchPostgres"


def load(paths):
    runs = []
    for path in paths:
        figures = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        if figures:
            runs.append(figures)
    if not runs:
        sys.exit("postgres-report.py: no figures in " + ", ".join(map(str, paths)))
    return runs


def find(run, contender, figure, **fields):
    """The value of one figure of one run, or None."""
    for entry in run:
        if entry.get("figure") != figure:
            continue
        if contender is not None and entry.get("contender", OURS) != contender:
            continue
        if all(entry.get(name) == value for name, value in fields.items()):
            return entry
    return None


def values(runs, contender, figure, field="value", **fields):
    found = [find(run, contender, figure, **fields) for run in runs]
    return [entry[field] for entry in found if entry is not None and entry.get(field) is not None]


def fmt(value, digits=0):
    if value >= 100 or digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def cell(samples, digits=0, suffix=""):
    if not samples:
        return "n/a"
    median = statistics.median(samples)
    if len(samples) == 1:
        return f"{fmt(median, digits)}{suffix}"
    return f"{fmt(median, digits)}{suffix} ({fmt(min(samples), digits)}–{fmt(max(samples), digits)})"


def ratios(runs, numerator, denominator):
    out = []
    for run in runs:
        top, bottom = numerator(run), denominator(run)
        if top is not None and bottom:
            out.append(top / bottom)
    return out


def value_of(contender, figure, **fields):
    def get(run):
        entry = find(run, contender, figure, **fields)
        return entry["value"] if entry else None
    return get


def verdict(samples, holds):
    if not samples:
        return "not measured"
    met = sum(1 for sample in samples if holds(sample))
    if met == len(samples):
        return "met" if len(samples) == 1 else f"met in all {len(samples)} runs"
    if met == 0:
        return "**missed**" if len(samples) == 1 else f"**missed** in all {len(samples)} runs"
    return f"**met in {met} of {len(samples)} runs**"


def contenders(runs):
    seen = []
    for run in runs:
        for entry in run:
            name = entry.get("contender", OURS)
            if entry.get("figure") == "submit" and name not in seen:
                seen.append(name)
    return sorted(seen, key=lambda name: (name != OURS, name == "pgbench", name))


def notes(runs, contender, figure):
    for run in runs:
        for entry in run:
            if (entry.get("contender", OURS) == contender and entry.get("figure") == figure
                    and entry.get("note")):
                return entry["note"]
    return None


def per_producers(samples_by_count):
    """One floor's figures, "1 producer X /s, 8 producers Y /s", for the counts that ran."""
    return ", ".join(f"{count} producer{'s' if count != 1 else ''} {cell(samples)} /s"
                     for count, samples in samples_by_count.items() if samples)


def section(runs):
    loads = values(runs, None, "load")
    starts = [entry.get("started", "?") for entry in (find(run, None, "load") for run in runs) if entry]
    lines = [
        BEGIN,
        "",
        f"{len(runs)} run{'s' if len(runs) != 1 else ''}, each on a fresh server; every figure is "
        "the median, with the lowest and highest run in brackets. Load average (1 min) at the start "
        "of each run: " + ", ".join(f"{load:.2f} ({start})" for load, start in zip(loads, starts)) + ".",
        "",
    ]
    producers = [1, 8, 64, 256]
    ours64 = value_of(OURS, "submit", mix="distinct", producers=64)
    pgbench8 = value_of("pgbench", "submit", producers=8)
    lines += ["| target | measured | verdict |", "|---|--:|---|"]
    to_pgbench = ratios(runs, ours64, pgbench8)
    lines.append(
        f"| `delay`, 64 producers ≥ 1.0× pgbench's 8-client rate | {cell(to_pgbench, 2, '×')} | "
        f"{verdict(to_pgbench, lambda r: r >= 1.0)} |")
    to_floor = ratios(runs, value_of(OURS, "submit", mix="distinct", producers=1),
                      value_of(OURS, "floor", producers=1))
    lines.append(
        f"| `delay`, 1 producer ≥ 0.8× the client floor from 1 producer | "
        f"{cell(to_floor, 2, '×')} | {verdict(to_floor, lambda r: r >= 0.8)} |")
    to_cheapest = ratios(runs, value_of(OURS, "submit", mix="distinct", producers=1),
                         value_of(OURS, "cheapest-floor", producers=1))
    if to_cheapest:
        lines.append(
            f"| (beside it: `delay`, 1 producer, to the cheapest client floor, a prepared "
            f"`SELECT 1` on a connection held outside the pool) | {cell(to_cheapest, 2, '×')} | "
            f"no target: the least a call through postgres-nio costs, see issue 42's item 5 |")
    to_statement = ratios(runs, value_of(OURS, "submit", mix="distinct", producers=1),
                          value_of(OURS, "statement-floor", producers=1))
    if to_statement:
        lines.append(
            f"| (beside it: `delay`, 1 producer, to its own statement sent by hand from 1 producer) | "
            f"{cell(to_statement, 2, '×')} | no target: the package's own share, see below |")
    write_to_floor = ratios(runs, value_of(OURS, "write-floor", producers=1),
                            value_of(OURS, "floor", producers=1))
    if write_to_floor:
        lines.append(
            f"| (beside it: the plainest write of a submission's row, a one-row `INSERT` with no "
            f"rule, 1 producer, to the client floor from 1 producer) | "
            f"{cell(write_to_floor, 2, '×')} | no target: the least that any submission that "
            f"writes its row costs |")
    to_hand = ratios(runs, value_of(OURS, "transaction", mix="by hand", producers=1),
                     value_of(OURS, "transaction", mix="delay(on:)", producers=1))
    if to_hand:
        lines.append(
            f"| `delay(on:)` in a one-statement transaction within 1.25× of the statement sent by "
            f"hand (time per call, by hand = 1) | {cell(to_hand, 2, '×')} | "
            f"{verdict(to_hand, lambda r: r <= 1.25)} |")
    for peer in contenders(runs):
        if peer in (OURS, "pgbench"):
            continue
        peer64 = ratios(runs, ours64, value_of(peer, "submit", mix="distinct", producers=64))
        if peer64:
            lines.append(
                f"| `delay`, 64 producers, ahead of {peer} at 64 | {cell(peer64, 2, '×')} | "
                f"{verdict(peer64, lambda r: r > 1.0)} |")
    for peer in [name for name in contenders(runs) if name not in (OURS, "pgbench")]:
        drains = ratios(runs, value_of(OURS, "drain", jobs=100_000), value_of(peer, "drain"))
        if drains:
            lines.append(
                f"| drain of 10⁵ due keys, 3 worker processes, ≥ 2× {peer}'s | "
                f"{cell(drains, 2, '×')} | {verdict(drains, lambda r: r >= 2.0)} |")
    to_drain_floor = ratios(runs, value_of(OURS, "drain", jobs=100_000),
                            value_of(OURS, "drain-floor", jobs=100_000))
    if to_drain_floor:
        lines.append(
            f"| drain of 10⁵ due keys ≥ 0.5× the drain floor (3 connections claiming and ending "
            f"rows by hand) | {cell(to_drain_floor, 2, '×')} | "
            f"{verdict(to_drain_floor, lambda r: r >= 0.5)} |")
    flatness = ratios(runs, value_of(OURS, "drain-last-tenth", jobs=1_000_000),
                      value_of(OURS, "drain-first-tenth", jobs=1_000_000))
    if flatness:
        lines.append(
            f"| drain of 10⁶ due keys: its last tenth ≥ 0.8× its first tenth (runs/s) | "
            f"{cell(flatness, 2, '×')} | {verdict(flatness, lambda r: r >= 0.8)} |")
    for load in (0, 64):
        p99 = values(runs, OURS, "lateness", field="p99", producers=load)
        label = "idle queue" if load == 0 else f"{load} producers submitting"
        lines.append(
            f"| fire lateness p99 ≤ 50 ms, {label} | {cell(p99, 1, ' ms')} | "
            f"{verdict(p99, lambda v: v <= 50)} |")
    lines.append("")

    lines += [
        "Submissions per second (each producer awaits its calls one after another; pgbench: "
        "clients):",
        "",
        "| contender | mix | " + " | ".join(str(count) for count in producers) + " |",
        "|---|---|" + "--:|" * len(producers),
    ]
    for contender in contenders(runs):
        for mix in ("distinct", "hot"):
            row = [values(runs, contender, "submit", mix=mix, producers=count) for count in producers]
            if not any(row):
                continue
            name = "`delay`" if contender == OURS else contender
            lines.append(f"| {name} | {mix} | " + " | ".join(cell(samples) for samples in row) + " |")
    floors = {count: values(runs, OURS, "floor", producers=count) for count in (1, 8)}
    statement_floors = {count: values(runs, OURS, "statement-floor", producers=count)
                        for count in (1, 8)}
    write_floors = {count: values(runs, OURS, "write-floor", producers=count) for count in (1, 8)}
    transactions = {way: values(runs, OURS, "transaction", mix=way, producers=1)
                    for way in ("delay(on:)", "by hand")}
    lines += [
        "",
        "Client floor, producers each sending `SELECT 1` through `PostgresClient` one after "
        "another: " + per_producers(floors) + ".",
    ]
    cheapest = values(runs, OURS, "cheapest-floor", producers=1)
    if cheapest:
        lines += [
            "",
            "Cheapest client floor, 1 producer sending a prepared `SELECT 1` on a connection "
            f"held outside the pool (`PostgresConnection.execute`): {cell(cheapest)} /s.",
        ]
    if any(statement_floors.values()):
        lines += [
            "",
            "Statement floor, producers each sending `delay`'s own statement by hand (`dpd_submit` "
            "with one submission, prepared, through `PostgresClient.execute`): "
            + per_producers(statement_floors) + ".",
        ]
    if any(write_floors.values()):
        lines += [
            "",
            "Write floor, producers each sending the plainest write of a submission's row: a "
            "prepared one-row `INSERT` into a copy of `dpd_bursts` (its indexes and its rows), "
            "with no rule and no wake-up: "
            + per_producers(write_floors) + ".",
        ]
    if any(transactions.values()):
        lines += [
            "",
            "One submission per transaction (`PostgresClient.withTransaction`), one producer: "
            + ", ".join(f"{way} {cell(samples)} /s" for way, samples in transactions.items() if samples)
            + ".",
        ]
    lines += [
        "",
        "| drain of 10⁵ due keys, 3 worker processes | runs/s | how |",
        "|---|--:|---|",
    ]
    for contender in contenders(runs):
        drained = values(runs, contender, "drain", jobs=100_000) or values(runs, contender, "drain")
        if drained:
            name = "this package" if contender == OURS else contender
            lines.append(f"| {name} | {cell(drained)} | {notes(runs, contender, 'drain') or ''} |")
    drain_floor = values(runs, OURS, "drain-floor", jobs=100_000)
    if drain_floor:
        lines.append(f"| drain floor | {cell(drain_floor)} | "
                     f"{notes(runs, OURS, 'drain-floor') or ''} |")
    for jobs in (100_000, 1_000_000):
        first = values(runs, OURS, "drain-first-tenth", jobs=jobs)
        last = values(runs, OURS, "drain-last-tenth", jobs=jobs)
        total = values(runs, OURS, "drain", jobs=jobs)
        floor = values(runs, OURS, "drain-floor", jobs=jobs)
        if first and last:
            lines += [
                "",
                f"Drain of {jobs:,} due keys by this package: {cell(total)} runs/s in all, "
                f"{cell(first)} runs/s in its first tenth and {cell(last)} runs/s in its last "
                f"tenth; the drain floor on the same rows {cell(floor)} rows/s.",
            ]
        server = values(runs, OURS, "drain-server-cpu", jobs=jobs)
        worker = values(runs, OURS, "drain-worker-cpu", jobs=jobs)
        floor_server = values(runs, OURS, "drain-floor-server-cpu", jobs=jobs)
        floor_client = values(runs, OURS, "drain-floor-client-cpu", jobs=jobs)
        if server and worker:
            lines.append(
                f"CPU per run: {cell(server, 1)} µs in the server and {cell(worker, 1)} µs in the "
                f"3 worker processes (user and system, from `/proc`); the floor's server "
                f"{cell(floor_server, 1)} µs per row"
                + (f", its client {cell(floor_client, 1)} µs per row." if floor_client else "."))
    lines += [
        "",
        "| fire lateness, deadline to handler start (300 keys, 20 ms delays) | p50 | p99 | max |",
        "|---|--:|--:|--:|",
    ]
    for load in (0, 64):
        label = "idle queue" if load == 0 else f"{load} producers submitting beside"
        row = [values(runs, OURS, "lateness", field=field, producers=load) for field in ("p50", "p99", "max")]
        lines.append(f"| {label} | " + " | ".join(cell(samples, 1, " ms") for samples in row) + " |")
    extra = []
    for contender in contenders(runs):
        figures = sorted({entry["figure"] for run in runs for entry in run
                          if entry.get("contender", OURS) == contender
                          and entry.get("figure") not in ("submit", "drain", "lateness", "floor", "load",
                                                          "statement-floor", "write-floor",
                                                          "transaction", "drain-floor",
                                                          "drain-first-tenth", "drain-last-tenth",
                                                          "drain-server-cpu", "drain-worker-cpu",
                                                          "drain-floor-server-cpu",
                                                          "drain-floor-client-cpu",
                                                          "cheapest-floor", "single")})
        for figure in figures:
            samples = values(runs, contender, figure)
            entry = next(entry for run in runs for entry in run
                         if entry.get("contender", OURS) == contender and entry.get("figure") == figure)
            extra.append(f"- {contender}, {figure}: {cell(samples)} {entry.get('unit', '')}"
                         + (f" ({entry['note']})" if entry.get("note") else ""))
    if extra:
        lines += ["", "Other figures of the same runs:", ""] + extra
    peer_notes = []
    for contender in contenders(runs):
        if contender == OURS:
            continue
        note = notes(runs, contender, "submit")
        if note:
            peer_notes.append(f"- {contender}: {note}")
    if peer_notes:
        lines += ["", "How each peer was called:", ""] + peer_notes
    lines += ["", END]
    return "\n".join(lines)


def main():
    runs = load(sys.argv[1:])
    text = REPORT.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < 0:
        sys.exit(f"postgres-report.py: the markers are missing from {REPORT.name}")
    REPORT.write_text(text[:start] + section(runs) + text[end + len(END):])
    print(f"postgres-report.py: wrote {len(runs)} run(s) into {REPORT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
