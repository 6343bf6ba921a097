#!/usr/bin/env bash
# The worker's own instructions per drained run, as callgrind counts them: repeatable within a
# few percent, where the workers' CPU per run in a drain moves by a third from one run to the
# next on this shared machine (BENCHMARKS.md, issue 42).
#
#   scripts/postgres-worker-instructions.sh BENCH...
#   DPD_WORKER_RUNS=N scripts/postgres-worker-instructions.sh BENCH...      # N runs (2,000)
#   DPD_INSTRUCTIONS_KEEP=DIR scripts/postgres-worker-instructions.sh ...   # keeps the profiles
#
# BENCH is a dpd-postgres-bench binary (a release build; an older commit's build compares that
# commit's worker with today's). For each one: a fresh server (scripts/postgres.sh), and one
# worker process of the drain (`BENCH --worker NAME 32`, the bench's worker with a handler that
# only counts, its progress lines off) under `valgrind --tool=callgrind`. Once it is waiting,
# N due rows are inserted for it, and it drains them; then 2N more. Callgrind's counters are
# zeroed before each insert and dumped once no row is left, so each phase's count holds the
# worker's every thread from the insert to the drain's end: its claims, runs, ends, the driver
# (postgres-nio, NIO) and the Swift runtime. The figure is (I(2N) - I(N)) / N: instructions
# per run, what a phase costs whatever its size (waking up, the last claim that finds nothing)
# cancelled out. Each binary is measured twice, in turn with the others, so that the spread
# shows.
#
# The worker runs with scripts/sigsuspend-shim.c preloaded: without it valgrind 3.19 dies in the
# async main's signal thread (see that file).
#
# Under valgrind the worker's threads take turns on one core and it runs some 50 times slower,
# so its batches (rows per claim, ends per statement) are not those of a real drain: the count
# prices the worker's code per run, not the drain's speed. The figures and the phases' sizes go
# to stdout, one line per measurement.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $# -ge 1 ]] || { echo "usage: $0 BENCH..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is missing" >&2; exit 1; }
command -v callgrind_control >/dev/null || { echo "$0: callgrind_control is missing" >&2; exit 1; }
runs=${DPD_WORKER_RUNS:-2000}
[[ $runs -ge 100 ]] || { echo "$0: DPD_WORKER_RUNS must be at least 100, not $runs" >&2; exit 2; }

work=$(mktemp -d)
export DPD_POSTGRES_STATE="$work/server.state"
cc -shared -fPIC -O2 -o "$work/sigsuspend-shim.so" scripts/sigsuspend-shim.c
worker=
cleanup() {
  [[ -n "$worker" ]] && kill "$worker" 2>/dev/null && wait "$worker" 2>/dev/null
  scripts/postgres.sh stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

name=worker-count
left() {
  psql -qtA "$url" -c "SELECT count(*) FROM dpd_bursts WHERE name = '$name' AND NOT idle"
}

# Inserts $1 due rows with keys from $2 on, and waits until the worker has ended them all.
drain_phase() {
  local count=$1 first=$2 waited=0
  callgrind_control -z "$worker" >/dev/null 2>&1
  psql -q -v ON_ERROR_STOP=1 "$url" -c "
    INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
    SELECT '$name', 'k' || i, '\"x\"'::jsonb, d.t, d.t, d.t
    FROM generate_series($first, $first + $count - 1) AS i,
      (SELECT clock_timestamp() AS t) AS d"
  while [[ "$(left)" != 0 ]]; do
    sleep 0.1
    waited=$((waited + 1))
    if [[ $waited -gt 6000 ]]; then echo "$0: $(left) rows left after 600 s" >&2; exit 1; fi
  done
  callgrind_control -d "phase-$count" "$worker" >/dev/null 2>&1
}

# The instructions of the last dump (the files are numbered in the order of the dumps).
last_dump_total() {
  local file
  file=$(ls -t "$work"/callgrind.out.* | head -1)
  sed -n 's/^totals: //p; s/^summary: //p' "$file" | head -1
}

measure() {
  local bench=$1 round=$2
  # valgrind 3.19 cannot read the DWARF 5 debug information that Swift emits: a stripped copy
  # (its symbols stay, for callgrind_annotate).
  local copy="$work/$(basename "$bench")"
  [[ -f "$copy" ]] || objcopy --strip-debug "$bench" "$copy"
  scripts/postgres.sh start >"$work/url"
  url=$(cat "$work/url")
  DPD_POSTGRES_URL="$url" DPD_BENCH_WORKER_PROGRESS=off SWIFT_DETERMINISTIC_HASHING=1 \
    LD_PRELOAD="$work/sigsuspend-shim.so" \
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out.%p" \
    "$copy" --worker "$name" 32 \
    >"$work/worker.out" 2>"$work/worker.err" &
  worker=$!
  # Waiting: its migration is done and its listener has asked for LISTEN.
  local waited=0
  until [[ "$(psql -qtA "$url" -c "SELECT count(*) FROM pg_stat_activity
      WHERE query LIKE 'LISTEN%'")" != 0 ]]; do
    sleep 0.5
    waited=$((waited + 1))
    if [[ $waited -gt 240 ]] || ! kill -0 "$worker" 2>/dev/null; then
      echo "$0: the worker did not start listening" >&2
      tail -5 "$work/worker.err" >&2
      exit 1
    fi
  done
  sleep 2
  drain_phase "$runs" 1
  local small
  small=$(last_dump_total)
  drain_phase $((2 * runs)) $((runs + 1))
  local large
  large=$(last_dump_total)
  if [[ -n "${DPD_INSTRUCTIONS_KEEP:-}" ]]; then
    cp "$(ls -t "$work"/callgrind.out.* | head -1)" \
      "$DPD_INSTRUCTIONS_KEEP/callgrind.worker.$(basename "$bench").$round.out"
  fi
  kill "$worker" 2>/dev/null || true
  wait "$worker" 2>/dev/null || true
  worker=
  rm -f "$work"/callgrind.out.*
  scripts/postgres.sh stop >/dev/null
  python3 -c "
import sys
small, large, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(f'{sys.argv[4]}: {(large - small) / runs:,.0f} worker instructions per run '
      f'({runs:,} runs: {small:,}; {2 * runs:,} runs: {large:,})')
" "$small" "$large" "$runs" "$(basename "$bench")"
}

for round in 1 2; do
  for bench in "$@"; do measure "$bench" "$round"; done
done
