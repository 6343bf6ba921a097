#!/usr/bin/env bash
# Counts the instructions of the library's hot paths with callgrind, so that a change can be
# checked against "no slower" on a shared machine, where wall-clock ratios move by ±10 %.
#
#   scripts/instructions.sh                     # builds, measures, prints one line per workload
#   scripts/instructions.sh --markdown FILE     # also writes them as the section "Instruction
#                                               # counts" of BENCHMARKS.md
#   scripts/instructions.sh --skip-build        # measures the release build already there
#
# Method: `dpd-instructions` (Sources/dpd-instructions) is a client of the library built in
# release mode, so the keyed queue's `@inlinable` path is specialised in it as in a user's
# module. It runs one workload a given number of times inside `measuredLoop`, and callgrind
# counts only the instructions executed inside that function and what it calls
# (`--toggle-collect`). Each workload runs at two sizes, N and 2N, and the figure is
# (Ir(2N) - Ir(N)) / N: the constant costs (the first timer armed, the loop's entry) cancel
# out. Every delay is an hour, so no timer fires during a run. Hashing is made deterministic
# (SWIFT_DETERMINISTIC_HASHING) so that the keyed figures repeat exactly.
#
# The keyed actor's workloads await every call from one task, as a user does. The task hops
# onto the idle actor and back on its own thread, through tail calls that callgrind cannot pair
# with a toggle on `measuredLoop`, so for them callgrind counts every task's first run instead
# (`--toggle-collect=future_adapter*`, where the runtime enters a task): the measured task, whose
# hops never suspend, and the set-up task and the timer's sleeping task, which cost the same at
# N and 2N and cancel out. These figures include the two hops of each call; they repeat within
# a few instructions.
#
# The stream workloads are counted the same way, from the runtime's entry into each task: the
# consumer's and the reading task's, which runs the whole loop over the base. Their totals move
# by up to a few hundred thousand instructions between runs of the same size (which thread the
# reading task starts on, and whether the consumer has suspended by then), always upwards, so
# each size is run three times and the least total kept.
#
# Workloads (per call):
#   queue-preempt      DelayedPreemptiveDispatchQueue.delay(for:task:) joining a pending burst
#   keyed-arm          a new key on KeyedDelayedPreemptiveDispatchQueue<Int, Void>, delay(_:for:)
#   keyed-arm-cancel   the same, plus the key's share of one cancelAll() after the last key
#   keyed-resubmit     a key already pending on that queue (1,000 pending), submitted again
#   keyed-last-wins-10, keyed-append-10, keyed-last-wins-10k, keyed-append-10k
#                      KeyedDelayedPreemptiveDispatchQueue<Int, [Int]>, bursts of 10 or 10,000
#                      submissions of [call], last value wins or `combine: { $0 += $1 }`: an
#                      appending submission stays O(1) amortised when the 10k figure is about
#                      the 10 one
#   actor-arm          a new key on KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock>,
#                      `await actor.delay(key, for:)` from a task: 25,411.9 before its path was
#                      specialised in the client, 3,655.9 after (keyed-arm: 3,266.9)
#   actor-resubmit     a key already pending on that actor (1,000 pending), submitted again:
#                      14,530.8 before, 1,782.9 after (keyed-resubmit: 1,047.0)
#   actor-preempt      DelayedPreemptiveActor<ContinuousClock>.delay(_:task:) joining a pending
#                      burst, `await`ed from a task: the actor's side of queue-preempt
#   queue-throttle, keyed-throttle-resubmit
#                      queue-preempt and keyed-resubmit with `minimumSpacing` (`.throttle`): the
#                      spacing rule's cost on those paths
#   stream-debounced, stream-throttled
#                      per element: `debounced(for:)` and `throttled(for:)` over a base that never
#                      suspends, read with `for await` from a task (the one burst's timer, an
#                      hour away, never fires): 719.5 and 717.0 before the per-element path was
#                      reworked for issue 24 (590ceaf), 485.0 and 481.0 after; `debounced` took
#                      500.0 on the code of 2026-11-24 (d5aebb7), before the single driver
#
# Takes about 2 minutes after the build (valgrind runs the client about 50 times slower). To put the
# figures into BENCHMARKS.md: `--markdown Benchmarks/instructions.md`, then
# `python3 scripts/benchmarks.py --report` (or paste the file over the section by hand).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

markdown=""
build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --markdown)
      markdown="${2:?--markdown needs a file}"
      shift 2
      ;;
    --skip-build)
      build=0
      shift
      ;;
    *)
      echo "usage: $0 [--markdown FILE] [--skip-build]" >&2
      exit 2
      ;;
  esac
done

command -v valgrind >/dev/null || {
  echo "valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
}

if [[ $build == 1 ]]; then
  swift build -c release --product dpd-instructions >&2
fi
binary="$(swift build -c release --show-bin-path)/dpd-instructions"
[[ -x "$binary" ]] || {
  echo "no release build of dpd-instructions at $binary" >&2
  exit 1
}

work="$(mktemp -d "${TMPDIR:-/tmp}/dpd-instructions.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 debug information that Swift emits; a stripped copy
# runs the same code.
objcopy --strip-debug "$binary" "$work/dpd-instructions"

# Ir counted inside measuredLoop for one run: workload, calls (the least of three runs for the
# stream workloads).
instructions() {
  local out="$work/callgrind.$1.$2"
  local toggle='*measuredLoop*' runs=1 least="" run count
  [[ $1 != actor-* && $1 != stream-* ]] || toggle='future_adapter*'
  [[ $1 != stream-* ]] || runs=3
  for ((run = 0; run < runs; run++)); do
    SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --toggle-collect="$toggle" \
      --callgrind-out-file="$out" "$work/dpd-instructions" "$1" "$2" >/dev/null 2>"$out.log" || {
      cat "$out.log" >&2
      exit 1
    }
    count="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")"
    if [[ -z $least || $count -lt $least ]]; then least="$count"; fi
  done
  echo "$least"
}

# workload, N: prints instructions per call, one decimal.
per_call() {
  local small large
  small="$(instructions "$1" "$2")"
  large="$(instructions "$1" "$(($2 * 2))")"
  awk -v small="$small" -v large="$large" -v n="$2" 'BEGIN { printf "%.1f", (large - small) / n }'
}

# 1234567.8 -> 1,234,567.8
group() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

specs=(queue-preempt:100000 keyed-arm:50000 keyed-arm-cancel:50000 keyed-resubmit:50000
  keyed-last-wins-10:50000 keyed-append-10:50000 keyed-last-wins-10k:50000 keyed-append-10k:50000
  actor-arm:20000 actor-resubmit:20000 actor-preempt:20000 queue-throttle:100000 keyed-throttle-resubmit:50000
  stream-debounced:100000 stream-throttled:100000)
describe() {
  case "$1" in
    queue-preempt) echo '`DelayedPreemptiveDispatchQueue.delay(for:task:)` joining a pending burst' ;;
    keyed-arm) echo 'a new key on `KeyedDelayedPreemptiveDispatchQueue<Int, Void>`' ;;
    keyed-arm-cancel) echo 'a new key, plus its share of one `cancelAll()` after the last one' ;;
    keyed-resubmit) echo 'a pending key submitted again (1,000 keys pending)' ;;
    keyed-last-wins-10) echo '`[Int]` values in bursts of 10, the last value wins' ;;
    keyed-append-10) echo '`[Int]` values in bursts of 10, `combine: { $0 += $1 }` keeps all' ;;
    keyed-last-wins-10k) echo '`[Int]` values in bursts of 10,000, the last value wins' ;;
    keyed-append-10k) echo '`[Int]` values in bursts of 10,000, every value appended' ;;
    actor-arm) echo 'a new key on `KeyedDelayedPreemptiveActor<Int, Void, ContinuousClock>`, awaited from a task' ;;
    actor-resubmit) echo 'a pending key submitted again to that actor (1,000 keys pending)' ;;
    actor-preempt) echo '`DelayedPreemptiveActor<ContinuousClock>.delay(_:task:)` joining a pending burst, awaited from a task' ;;
    queue-throttle) echo '`queue-preempt` on a queue with `minimumSpacing` (`.throttle`)' ;;
    keyed-throttle-resubmit) echo '`keyed-resubmit` on a keyed queue with `minimumSpacing`' ;;
    stream-debounced) echo 'an element of a base that never suspends, through `debounced(for:)`' ;;
    stream-throttled) echo 'the same through `throttled(for:)`' ;;
  esac
}

rows=()
declare -A figures=()
for spec in "${specs[@]}"; do
  name="${spec%%:*}"
  size="${spec##*:}"
  figure="$(per_call "$name" "$size")"
  figures[$name]="$figure"
  printf '%-18s %10s\n' "$name" "$figure"
  rows+=("| \`$name\`: $(describe "$name") | $(group "$figure") | $(group "$size") |")
done

# An appending `combine` against last-wins: per call, per burst, and the 10,000 against the 10.
per_burst() { awk -v call="$1" -v n="$2" 'BEGIN { printf "%.0f", call * n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
combine_text="Keeping every value: per call, an appending \`combine\` costs \
$(ratio "${figures[keyed-append-10]}" "${figures[keyed-last-wins-10]}")× last-wins in bursts of 10 \
and $(ratio "${figures[keyed-append-10k]}" "${figures[keyed-last-wins-10k]}")× in bursts of 10,000; \
per burst, $(group "$(per_burst "${figures[keyed-append-10]}" 10)") against \
$(group "$(per_burst "${figures[keyed-last-wins-10]}" 10)") instructions for 10 submissions. A \
submission appended to a burst of 10,000 costs \
$(ratio "${figures[keyed-append-10k]}" "${figures[keyed-append-10]}")× one appended to a burst \
of 10 (the new keys of the small bursts are the difference): the burst's array grows in place, \
never copied per submission."
echo "$combine_text" | tr -s ' ' >&2

[[ -n "$markdown" ]] || exit 0

commit="$(git rev-parse --short HEAD)"
if ! git diff --quiet HEAD -- Package.swift Sources; then commit="$commit, with local changes"; fi
# The last commit that changed the library's code (its Swift files, not its docs).
library="$(git log -1 --format=%h -- 'Sources/DelayedPreemptiveDispatch/*.swift')"
swift_version="$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([^ ]*\).*/\1/p' | head -1)"
{
  cat <<'TEXT'
## Instruction counts

Generated by `scripts/instructions.sh --markdown Benchmarks/instructions.md`: instructions per
call of the hot paths, counted with callgrind rather than timed, so that a change can be checked
against "no slower" on a shared machine, where times move by ±10 % between runs. A client built
in release mode (`Sources/dpd-instructions`; it specialises the keyed queue's `@inlinable` path
as a user's module does) runs a workload N and 2N times inside one function. Callgrind counts
only that function and what it calls, and the figure is the difference divided by N, so
start-up and the first timer armed cancel out. Every delay is an hour, so no timer fires, and
hashing is deterministic, so the figures repeat exactly. The actors' workloads await each call
from a task, as a user does, so their figures include the hop onto the actor and back;
callgrind counts them from the runtime's entry into each task (the script's header says why).
The stream workloads, per element of a base that never suspends read through the operator
from a task, are counted the same way; each of their sizes is the least of three runs, since
where the reading task starts moves a run's total by a few hundred thousand instructions.

TEXT
  echo "Measured on commit \`$commit\` (library code as of \`$library\`), $(uname -m),"
  echo "Swift $swift_version, $(valgrind --version)."
  echo
  echo "| workload, per call | instructions | N |"
  echo "|---|--:|--:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "$combine_text" | fold -s -w 96 | sed 's/ *$//'
  cat <<'TEXT'

Rerun with `bash scripts/instructions.sh` (about 2 minutes after the release build); a change to
the library should leave every figure within a few percent.
TEXT
} >"$markdown"
echo "wrote $markdown" >&2
