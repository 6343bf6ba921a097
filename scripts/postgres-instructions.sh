#!/usr/bin/env bash
# The server's instructions per submission of `delay`'s statement, as callgrind counts them:
# repeatable where the wall clock on this shared machine moves by 10 to 25 %.
#
#   scripts/postgres-instructions.sh [--batch N] [--hot] BENCH...
#   scripts/postgres-instructions.sh --write-floor BENCH
#   DPD_INSTRUCTIONS_SQL=FILE scripts/postgres-instructions.sh ... BENCH
#
# BENCH is a dpd-postgres-bench binary (a release build; an older commit's build compares that
# commit's statement with today's). For each one: a fresh server (scripts/postgres.sh), the
# bench's migration and starting table (10^5 pending keys of another queue, statistics taken),
# then the server is stopped and a single-user backend (`postgres --single`) under
# `valgrind --tool=callgrind` runs the bench's own pgbench statement, prepared once and executed
# 300 and then 900 times, each execution a transaction of N submissions with fresh keys
# (N = 1 by default; 64 is near the batches that 64 producers make). The figure is
# (I(900) - I(300)) / 600 / N: instructions per submission, the start-up and the preparation
# cancelled out. --hot sends the submissions to 100 keys in turn instead of fresh keys, so that
# all but the first 100 join a burst (the upsert's conflict branch: what debouncing a key does).
#
# DPD_INSTRUCTIONS_SQL names a file of SQL run after the bench's setup, before the count: to
# price one change of the SQL on the same build, for example `dpd_now()` redefined as
# `SELECT clock_timestamp()` to count what reading the test clock's setting costs.
#
# --write-floor measures, the same way, the bench's write floor instead: the plainest write of
# a submission's row (a one-row INSERT with no rule into a copy of `dpd_bursts` with its indexes
# and rows; see dpd-postgres-bench), the least that any submission keeping its row there costs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

batch=1
write_floor=0
hot=0
if [[ "${1:-}" == "--batch" ]]; then batch="$2"; shift 2; fi
if [[ "${1:-}" == "--hot" ]]; then hot=1; shift; fi
if [[ "${1:-}" == "--write-floor" ]]; then write_floor=1; shift; fi
if [[ $write_floor -eq 1 && $batch -ne 1 ]]; then
  echo "$0: --write-floor measures one row per transaction: no --batch" >&2; exit 2
fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--batch N] BENCH..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is missing" >&2; exit 1; }

work=$(mktemp -d)
export DPD_POSTGRES_STATE="$work/server.state"
trap 'scripts/postgres.sh stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

for bench in "$@"; do
  scripts/postgres.sh stop >/dev/null 2>&1 || true
  url=$(scripts/postgres.sh start)
  DPD_POSTGRES_URL="$url" DPD_BENCH_PARTS=none "$bench" >/dev/null
  if [[ $write_floor -eq 1 ]]; then
    "$bench" --write-floor-sql |
      PGOPTIONS="-c client_min_messages=warning" psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null
    "$bench" --pgbench-write-floor | grep -v '^\\set' >"$work/statement.sql"
  else
    "$bench" --pgbench-script bench-submit | grep -v '^\\set' >"$work/statement.sql"
  fi
  if [[ -n "${DPD_INSTRUCTIONS_SQL:-}" ]]; then
    psql -q -v ON_ERROR_STOP=1 "$url" -f "$DPD_INSTRUCTIONS_SQL" >/dev/null
  fi
  # shellcheck disable=SC1090
  source "$DPD_POSTGRES_STATE"   # BIN, DIR
  scripts/postgres.sh down >/dev/null
  declare -A total=()
  for runs in 300 900; do
    rm -rf "$work/data"
    cp -a "$DIR/data" "$work/data"
    python3 - "$work/statement.sql" "$runs" "$batch" "$hot" >"$work/input.sql" <<'PY'
import sys
statement = open(sys.argv[1]).read().strip().rstrip(";")
runs, batch, hot = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
if batch > 1:
    for single, many in [
        ("ARRAY['k' || :k]::text[]",
         f"(SELECT array_agg('k' || (:k * 1000 + g)) FROM generate_series(1, {batch}) g)::text[]"),
        ("ARRAY['1']::text[]", f"array_fill('1'::text, ARRAY[{batch}])"),
        ("ARRAY[3600000]::float8[]", f"array_fill(3600000::float8, ARRAY[{batch}])"),
    ]:
        if single not in statement:
            sys.exit(f"postgres-instructions.sh: the statement has no {single}")
        statement = statement.replace(single, many)
print("PREPARE submit(bigint) AS " + statement.replace(":k", "$1") + ";\n")
for index in range(runs):
    print(f"EXECUTE submit({1_000_000 + (index % 100 if hot else index)});\n")
PY
    chown -R postgres "$work"
    runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
      "$BIN/postgres" --single -j -c fsync=off -c synchronous_commit=off -D "$work/data" dpd \
      <"$work/input.sql" >"$work/backend.log" 2>&1
    if grep -q "ERROR" "$work/backend.log"; then
      grep -m3 "ERROR" "$work/backend.log" >&2
      exit 1
    fi
    total[$runs]=$(sed -n 's/^summary: //p' "$work/callgrind.out")
  done
  what="server instructions per submission (batches of $batch)"
  [[ $hot -eq 0 ]] || what="$what, to 100 keys in turn"
  [[ $write_floor -eq 0 ]] || what="server instructions per plain one-row write (the write floor)"
  python3 -c "print('$bench: %.0f $what' % ((${total[900]} - ${total[300]}) / 600 / $batch))"
  scripts/postgres.sh up >/dev/null
done
