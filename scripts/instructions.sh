#!/usr/bin/env bash
# Counts the instructions of the library's hot paths with callgrind, so that a change can be
# checked against "no slower" on a shared machine, where wall-clock ratios move by ±10 %.
#
#   scripts/instructions.sh                     # builds, measures, prints one line per workload
#   scripts/instructions.sh --markdown FILE     # also writes the figures as a markdown table
#   scripts/instructions.sh --skip-build        # measures the release build already there
#
# Method: `dpd-instructions` (Sources/dpd-instructions) is a client of the library built in
# release mode, so the keyed queue's `@inlinable` path is specialised in it as in a user's
# module. It runs one workload a given number of times inside `measuredLoop`, and callgrind
# counts only the instructions executed inside that function and what it calls
# (`--toggle-collect`), on the calling thread. Each workload runs at two sizes, N and 2N, and
# the figure is (Ir(2N) - Ir(N)) / N: the constant costs (the first timer armed, the loop's
# entry) cancel out. Every delay is an hour, so no timer fires during a run. Hashing is made
# deterministic (SWIFT_DETERMINISTIC_HASHING) so that the keyed figures repeat exactly.
#
# Workloads (per call):
#   queue-preempt      DelayedPreemptiveDispatchQueue.delay(for:task:) joining a pending burst
#   keyed-arm          a new key on KeyedDelayedPreemptiveDispatchQueue<Int, Void>, delay(_:for:)
#   keyed-arm-cancel   the same, plus the key's share of one cancelAll() after the last key
#   keyed-resubmit     a key already pending on that queue (1,000 pending), submitted again
#
# Takes about 30 s after the build (valgrind runs the client about 50 times slower).
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

# Ir counted inside measuredLoop for one run: workload, calls.
instructions() {
  local out="$work/callgrind.$1.$2"
  SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --toggle-collect='*measuredLoop*' \
    --callgrind-out-file="$out" "$work/dpd-instructions" "$1" "$2" >/dev/null 2>"$out.log" || {
    cat "$out.log" >&2
    exit 1
  }
  sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
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

commit="$(git rev-parse --short HEAD)"
if ! git diff --quiet HEAD -- Package.swift Sources; then commit="$commit with local changes"; fi

rows=()
for spec in queue-preempt:100000 keyed-arm:50000 keyed-arm-cancel:50000 keyed-resubmit:50000; do
  name="${spec%%:*}"
  figure="$(per_call "$name" "${spec##*:}")"
  printf '%-18s %10s\n' "$name" "$figure"
  rows+=("$name|$figure|${spec##*:}")
done

if [[ -n "$markdown" ]]; then
  {
    echo "Instructions per call (callgrind Ir, release build), measured on $commit:"
    echo
    echo "| workload | instructions per call | sizes |"
    echo "|---|--:|--:|"
    for row in "${rows[@]}"; do
      IFS='|' read -r name figure size <<<"$row"
      printf '| `%s` | %s | %s and %s calls |\n' "$name" "$(group "$figure")" "$(group "$size")" \
        "$(group $((size * 2)))"
    done
  } >"$markdown"
  echo "wrote $markdown" >&2
fi
