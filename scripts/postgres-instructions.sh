#!/usr/bin/env bash
# The server's instructions per submission of `delay`'s statement, as callgrind counts them:
# repeatable where the wall clock on this shared machine moves by 10 to 25 %.
#
#   scripts/postgres-instructions.sh [--batch N] [--hot] BENCH...
#   scripts/postgres-instructions.sh --write-floor BENCH
#   scripts/postgres-instructions.sh [--batch N] --drain [--claims-only] [--before-issue-42] BENCH...
#   DPD_INSTRUCTIONS_SQL=FILE scripts/postgres-instructions.sh ... BENCH
#   DPD_INSTRUCTIONS_KEEP=DIR scripts/postgres-instructions.sh ... BENCH   # keeps the profiles
#
# BENCH is a dpd-postgres-bench binary (a release build; an older commit's build compares that
# commit's statement with today's). For each one: a fresh server (scripts/postgres.sh), the
# bench's migration and starting table (10^5 pending keys of another queue, statistics taken),
# then the server is stopped and a single-user backend (`postgres --single`) under
# `valgrind --tool=callgrind` runs the bench's own pgbench statement, prepared once and executed
# 300 and then 900 times, each execution a transaction of N submissions with fresh keys
# (N = 1 by default; 64 is near the batches that 64 producers make). A statement that is a CALL
# (the queue's `delay` since its submissions commit inside the statement) cannot be PREPAREd in
# SQL, so it is sent as it is each time, its parsing and planning counted
# (DPD_INSTRUCTIONS_UNPREPARED=1 sends any statement so, to compare a SELECT with a CALL). The
# figure is
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
#
# --drain counts a drained run instead: the server's instructions per row claimed and ended, for
# the package's statements (`dpd_claim`, called as the worker calls it, then the end of successful
# runs, `SucceededStatement`) and for the drain floor's (DrainFloor: a plain claim of due rows and
# a DELETE of them), in batches of 32 rows as the bench's drain claims them (--batch N: N rows).
# On top of the starting table: 10^5 due rows to claim for each side, and 10^5 rows already
# claimed to end (their claims are md5(key), so that the input can name them). A backend claims
# R batches, then ends R batches of other rows (R = 300, then 900), all prepared once, each
# statement's rows counted in the server rather than returned (a single-user backend prints them
# in a verbose form that costs more than the statement); the figure is (I(900) - I(300)) / 600 / N
# per row. --claims-only leaves the ends out, which splits the figure into its claim and its end.
# 900 batches must fit in the 10^5 rows of each side: N is at most 111.
#
# --drain --before-issue-42 counts the package's side with its statements as they were before
# issue 42 (commit 6437cdd): the claim sent as a prepared statement of its own, not through
# `dpd_claim`, and joined to its locked rows by key alone; the end finding its rows again by key,
# not by claim. They are made from the bench's statements by undoing those two changes, and the
# script stops if the text to undo is no longer there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

batch=
write_floor=0
hot=0
drain=0
claims_only=0
if [[ "${1:-}" == "--batch" ]]; then batch="$2"; shift 2; fi
if [[ "${1:-}" == "--hot" ]]; then hot=1; shift; fi
if [[ "${1:-}" == "--write-floor" ]]; then write_floor=1; shift; fi
if [[ "${1:-}" == "--drain" ]]; then drain=1; shift; fi
if [[ $drain -eq 1 && "${1:-}" == "--claims-only" ]]; then claims_only=1; shift; fi
before=0
if [[ $drain -eq 1 && "${1:-}" == "--before-issue-42" ]]; then before=1; shift; fi
if [[ $drain -eq 1 ]]; then batch=${batch:-32}; else batch=${batch:-1}; fi
if [[ $drain -eq 1 && ( $batch -lt 1 || $batch -gt 111 ) ]]; then
  echo "$0: --drain claims 900 batches of --batch rows from 10^5: --batch must be 1 to 111" >&2
  exit 2
fi
if [[ $write_floor -eq 1 && $batch -ne 1 ]]; then
  echo "$0: --write-floor measures one row per transaction: no --batch" >&2; exit 2
fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--batch N] BENCH..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is missing" >&2; exit 1; }

work=$(mktemp -d)
export DPD_POSTGRES_STATE="$work/server.state"
trap 'scripts/postgres.sh stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# Runs $1 (SQL for a single-user backend) under callgrind on a fresh copy of the stopped
# server's data directory; prints the instructions counted. DIR and BIN come from the state file.
# With DPD_INSTRUCTIONS_KEEP set to a directory, the profile and the input are kept there, named
# after $2, for callgrind_annotate.
callgrind_total() {
  rm -rf "$work/data"
  cp -a "$DIR/data" "$work/data"
  chown -R postgres "$work"
  runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
    "$BIN/postgres" --single -j -c fsync=off -c synchronous_commit="${synchronous_commit:-off}" \
    -D "$work/data" dpd <"$1" >"$work/backend.log" 2>&1
  if grep -q "ERROR" "$work/backend.log"; then
    grep -m3 "ERROR" "$work/backend.log" >&2
    exit 1
  fi
  if [[ -n "${DPD_INSTRUCTIONS_KEEP:-}" ]]; then
    cp "$work/callgrind.out" "$DPD_INSTRUCTIONS_KEEP/callgrind.$2.out"
    cp "$1" "$DPD_INSTRUCTIONS_KEEP/input.$2.sql"
  fi
  sed -n 's/^summary: //p' "$work/callgrind.out"
}

# --drain: the rows of both sides (see the top of this file), then the counts.
count_drain() {
  local bench=$1
  psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null <<'SQL'
INSERT INTO dpd_bursts (name, key, value, deadline, due_at, first_submitted)
SELECT q.name, q.prefix || i, '"x"'::jsonb, d.t, d.t, d.t
FROM generate_series(1, 100000) AS i, (SELECT clock_timestamp() - interval '1 minute' AS t) AS d,
  (VALUES ('bench-drain', 'd'), ('bench-end', 'e'), ('floor-drain', 'd'), ('floor-end', 'e'))
    AS q(name, prefix);
UPDATE dpd_bursts SET claim = md5(key)::uuid, owner = 'bench', claimed_generation = generation,
  fence = nextval('dpd_fence'), attempts = 1, last_start = clock_timestamp(),
  due_at = clock_timestamp() + interval '1 day'
WHERE name IN ('bench-end', 'floor-end');
VACUUM ANALYZE dpd_bursts;
SQL
  "$bench" --statement succeeded >"$work/succeeded.sql"
  "$bench" --statement claim >"$work/claim.sql"
  "$bench" --statement floor-claim >"$work/floor-claim.sql"
  "$bench" --statement floor-end >"$work/floor-end.sql"
  # shellcheck disable=SC1090
  source "$DPD_POSTGRES_STATE"   # BIN, DIR
  scripts/postgres.sh down >/dev/null
  # A commit's WAL flushed at once: a single-user backend has no WAL writer, and until its commit
  # is flushed, no scan may set a row's hint bits or mark the index entries of the rows it ended
  # as dead. Every claim would then walk all the rows claimed before it (9.3 of 12.9 billion
  # instructions in a trial of 900 claims); in the running server the WAL writer flushes every
  # 200 ms. With fsync off, a flush is a write, no wait.
  local synchronous_commit=on
  local side runs
  for side in package floor; do
    declare -A total=()
    for runs in 300 900; do
      python3 - "$work" "$side" "$runs" "$claims_only" "$batch" "$before" \
        >"$work/input.sql" <<'PY'
import hashlib, sys, uuid
work, side, runs, claims_only = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
batch, before = int(sys.argv[5]), sys.argv[6] == "1"
def counted(sql):
    # The statement's rows counted instead of returned: a single-user backend prints every row
    # it returns (with each column's type), which would cost more than the statement itself. A
    # statement with a WITH clause gets its main query (the first SELECT or UPDATE after a
    # closing parenthesis at depth 0) as one more query of that clause.
    if not sql.startswith("WITH"):
        return f"WITH answer AS ({sql}) SELECT count(*) FROM answer"
    depth = 0
    for index, char in enumerate(sql):
        depth += {"(": 1, ")": -1}.get(char, 0)
        rest = sql[index + 1:].lstrip()
        if char == ")" and depth == 0 and (rest.startswith("SELECT") or rest.startswith("UPDATE")):
            return f"{sql[:index + 1]}, answer AS ({rest}) SELECT count(*) FROM answer"
    sys.exit("postgres-instructions.sh: no main query found in a WITH statement")
def undone(sql, changes):
    # The statement as it was before issue 42: each change undone, which must be found.
    for now, then in changes:
        if sql.count(now) != 1:
            sys.exit(f"postgres-instructions.sh: --before-issue-42 finds {sql.count(now)} of {now!r}")
        sql = sql.replace(now, then)
    return sql
def text(name, changes=()):
    return counted(undone(open(f"{work}/{name}.sql").read().strip().rstrip(";"), changes))
if side == "package":
    if before:
        claim_sql = text("claim", [(
            "WHERE b.name = $1 AND b.key = due.key AND b.key = ANY (ARRAY(SELECT due.key FROM due))",
            "WHERE b.name = $1 AND b.key = due.key")])
        end_sql = text("succeeded", [
            (f"b.claim = done.claim AND {c}", f"b.key = done.key AND {c}") for c in (
                "done.finished AND NOT done.rests", "done.finished AND done.rests",
                "NOT done.finished")])
    else:
        claim_sql = counted("SELECT * FROM dpd_claim($1, $2, $3, $4, $5, $6)")
        end_sql = text("succeeded")
    print("PREPARE claim(text, int8, text, float8, int8, float8) AS " + claim_sql + ";\n")
    print("PREPARE ended(text, text[], uuid[], float8, float8[]) AS " + end_sql + ";\n")
    claim = f"EXECUTE claim('bench-drain', {batch}, 'bench-owner', 30000, 5, 0);\n"
    end = "EXECUTE ended('bench-end', {keys}, {claims}, 0, array_fill(-1::float8, ARRAY[%d]));\n" % batch
else:
    print("PREPARE claim(text, int8) AS " + text("floor-claim") + ";\n")
    print("PREPARE ended(text, text[], uuid[]) AS " + text("floor-end") + ";\n")
    claim = f"EXECUTE claim('floor-drain', {batch});\n"
    end = "EXECUTE ended('floor-end', {keys}, {claims});\n"
for index in range(runs):
    print(claim)
if not claims_only:
    for index in range(runs):
        keys = [f"e{index * batch + i + 1}" for i in range(batch)]
        claims = [str(uuid.UUID(hashlib.md5(key.encode()).hexdigest())) for key in keys]
        print(end.format(
            keys="ARRAY[%s]::text[]" % ", ".join(f"'{k}'" for k in keys),
            claims="ARRAY[%s]::uuid[]" % ", ".join(f"'{c}'" for c in claims)))
PY
      total[$runs]=$(callgrind_total "$work/input.sql" "drain-$side-$runs")
    done
    local what="server instructions per drained row (claimed and ended, $batch a batch), $side"
    [[ $claims_only -eq 0 ]] || what="server instructions per claimed row ($batch a claim), $side"
    [[ $side == package ]] || what="$what (the statements of the drain floor)"
    [[ $side == floor || $before -eq 0 ]] || what="$what, its statements before issue 42"
    python3 -c 'import sys; print("%s: %.0f %s" % (sys.argv[1], (int(sys.argv[3]) - int(sys.argv[2])) / 600 / int(sys.argv[4]), sys.argv[5]))' \
      "$bench" "${total[300]}" "${total[900]}" "$batch" "$what"
  done
  scripts/postgres.sh up >/dev/null
}

for bench in "$@"; do
  scripts/postgres.sh stop >/dev/null 2>&1 || true
  url=$(scripts/postgres.sh start)
  DPD_POSTGRES_URL="$url" DPD_BENCH_PARTS=none "$bench" >/dev/null
  if [[ $drain -eq 1 ]]; then
    count_drain "$bench"
    continue
  fi
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
    python3 - "$work/statement.sql" "$runs" "$batch" "$hot" "${DPD_INSTRUCTIONS_UNPREPARED:-0}" \
      >"$work/input.sql" <<'PY'
import sys
statement = open(sys.argv[1]).read().strip().rstrip(";")
runs, batch, hot = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
unprepared = sys.argv[5] == "1"
# A CALL takes no subquery in its arguments: sent as it is, its batch's keys are written out.
sent_as_is = statement.startswith("CALL") or unprepared
if batch > 1:
    keys_of_batch = (
        "ARRAY[" + ", ".join(f"'k' || (:k * 1000 + {g})" for g in range(1, batch + 1)) + "]::text[]"
        if sent_as_is else
        f"(SELECT array_agg('k' || (:k * 1000 + g)) FROM generate_series(1, {batch}) g)::text[]")
    for single, many in [
        ("ARRAY['k' || :k]::text[]", keys_of_batch),
        ("ARRAY['1']::text[]", f"array_fill('1'::text, ARRAY[{batch}])"),
        ("ARRAY[3600000]::float8[]", f"array_fill(3600000::float8, ARRAY[{batch}])"),
    ]:
        if single not in statement:
            sys.exit(f"postgres-instructions.sh: the statement has no {single}")
        statement = statement.replace(single, many)
keys = [1_000_000 + (index % 100 if hot else index) for index in range(runs)]
if sent_as_is:
    # SQL's PREPARE takes no CALL (a client prepares one through the protocol, as the package
    # and pgbench -M prepared do): each CALL is sent as it is, so its parsing and planning count.
    for key in keys:
        print(statement.replace(":k", str(key)) + ";\n")
else:
    print("PREPARE submit(bigint) AS " + statement.replace(":k", "$1") + ";\n")
    for key in keys:
        print(f"EXECUTE submit({key});\n")
PY
    total[$runs]=$(callgrind_total "$work/input.sql" "submit-$runs")
  done
  what="server instructions per submission (batches of $batch)"
  [[ $hot -eq 0 ]] || what="$what, to 100 keys in turn"
  [[ $write_floor -eq 0 ]] || what="server instructions per plain one-row write (the write floor)"
  python3 -c "print('$bench: %.0f $what' % ((${total[900]} - ${total[300]}) / 600 / $batch))"
  scripts/postgres.sh up >/dev/null
done
