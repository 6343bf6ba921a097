#!/usr/bin/env bash
# The long mode: DPD_LONG_TESTS=1 scales the suite up, with both cores kept busy meanwhile.
#   - the state machine's model test runs 10^6 random sequences (10^4 normally);
#   - storms run 8 threads x 10^6 delay calls on the GCD queue and 8 tasks x 10^5 on the actor;
#   - the ManualClock scenarios are replayed 1,000 times and must give identical traces.
# It builds in release with testing enabled, so that 10^6 sequences take minutes, not hours.
# Extra arguments go to `swift test` (for instance `--filter StormTests`).
set -euo pipefail
cd "$(dirname "$0")/.."

burn() { while :; do :; done; }
burn &
first=$!
burn &
second=$!
trap 'kill "$first" "$second" 2>/dev/null || true' EXIT

start=$(date +%s)
DPD_LONG_TESTS=1 swift test -c release -Xswiftc -enable-testing --scratch-path .build-long "$@"
echo "long mode took $(($(date +%s) - start)) s (build included), both cores loaded"
