#!/usr/bin/env bash
# The failover suite, on one machine, as many times as asked:
#
#   scripts/faults.sh             # each scenario once, as CI runs them
#   scripts/faults.sh 20          # each scenario 20 times in a row
#   scripts/faults.sh 20 read     # only the scenarios whose test name contains "read"
#
# Each run of a scenario starts a cluster of its own with scripts/postgres.sh (a primary, a
# synchronous hot standby `s1` made with pg_basebackup -R, a second hot standby `s2` that stays
# read-only) and scripts/tcp-proxy.py in front of it, runs four producers and three worker
# processes of dpd-postgres-test-worker through the proxy, performs the scenario, and checks:
# acknowledged submissions lost, keys left pending or claimed, overlapping runs of a key, kept
# failures, workers alive, seconds from the proxy's switch to the first claim, and whether every
# fence after the switch is greater than every fence before it. Every server is thrown away
# afterwards. The scenarios (PostgresFailoverTests in the Postgres package):
#
#   (a) primaryKilledStandbyPromotedLosesNothing: the primary killed (pg_ctl stop -m immediate),
#       s1 promoted, the proxy switched to it and every connection dropped;
#   (b) readOnlyNodeFirstThenPromotedStandbyLosesNothing: as (a), but the proxy points at the
#       read-only s2 for 5 s first, then at the promoted s1 without dropping anything;
#   (e) switchoverBackToTheRebuiltOldPrimaryLosesNothing: (a), then the old primary rebuilt as a
#       synchronous standby of s1 (pg_basebackup, named p2), then a planned switchover back to
#       it: s1 stopped cleanly, p2 promoted, the proxy switched and every connection dropped;
#       fences are checked across the second promotion;
#
# and the partition scenarios (PostgresPartitionTests), on the test server with a proxy of their
# own in front of one of the three workers (lease 2 s, fenced writes):
#
#   (c) aWorkerPartitionedForTwiceItsLeaseLosesNothingAndResumes: the proxy forwards nothing and
#       closes nothing for 4 s, then forwards again; checked as above, and for stale writes
#       applied and the partitioned worker's first claim after the heal;
#       aWorkerPartitionedForTenTimesItsLeaseLosesNothingAndResumes: the same for 20 s;
#   (d) aWorkerWhoseClockJumpsForwardAndBackRunsNothingEarlyAndLosesNothing
#       (PostgresClockJumpTests): one worker's wall clock (CLOCK_REALTIME only, through
#       scripts/wall-clock-shim.c preloaded) jumps an hour forward, then an hour behind, then
#       back; checked as above, and for sentinel bursts run before they were due and leases the
#       jumping worker lost. It needs a C compiler (cc).
#
# It prints one line per run of a scenario and a summary line per scenario, and exits non-zero
# when any run broke a check. It needs what the Postgres tests need (Debian's PostgreSQL 15,
# which scripts/postgres.sh installs when missing, and python3).
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-1}"
match="${2:-}"
state="${TMPDIR:-/tmp}/dpd-faults-$$.state"
trap 'DPD_POSTGRES_STATE="$state" scripts/postgres.sh stop >/dev/null 2>&1 || true' EXIT

# The suites of the Postgres package are enabled by a configured test server; the failover
# scenarios make clusters of their own besides it.
DPD_POSTGRES_URL="$(DPD_POSTGRES_STATE="$state" scripts/postgres.sh start)"
export DPD_POSTGRES_URL DPD_FAILOVER_RUNS="$runs"

swift build --package-path Postgres --build-tests -Xswiftc -warnings-as-errors
filter="PostgresFailoverTests|PostgresPartitionTests|PostgresClockJumpTests"
if [[ -n "$match" ]]; then filter="(PostgresFailoverTests|PostgresPartitionTests|PostgresClockJumpTests).*${match}"; fi
log="${TMPDIR:-/tmp}/dpd-faults-$$.log"
status=0
swift test --package-path Postgres -Xswiftc -warnings-as-errors --skip-build --filter "$filter" \
  >"$log" 2>&1 || status=$?
grep -E "^(failover|failover through a read-only node|switchover back|partition of [0-9]+ leases|clock jump)(, run [0-9]+ of [0-9]+)?: " \
  "$log" || true
grep -E "Test run with|✘" "$log" | tail -20 || true
rm -f "$log"
exit "$status"
