#!/usr/bin/env bash
# The PostgreSQL package's figures beside its peers', three runs, each on a fresh throwaway
# server with the same settings (scripts/postgres.sh), then the report in BENCHMARKS.md.
#
#   scripts/postgres-bench.sh              # 3 runs (about 15 minutes on 2 cores), then the report
#   scripts/postgres-bench.sh --runs 1     # one run
#   scripts/postgres-bench.sh --report     # only rewrite the report from the last runs
#
# Each run records the load average at its start, then measures, one after another on the same
# server:
#   - ours: dpd-postgres-bench (release build): the client, cheapest, statement and write floors,
#     `delay` from 1/8/64/256 producers (distinct keys and a hot mix), the drain of 10^5 and of
#     10^6 due keys by 3 worker processes (with the rates of their first and last tenths) and
#     the drain floor before each (3 connections claiming and ending the same rows by hand),
#     fire lateness idle and under load;
#   - pgbench with `delay`'s own statement (printed by dpd-postgres-bench, one row per
#     transaction, a fresh key each), 1, 8 and 64 clients, `-M prepared`;
#   - pgqueuer 1.6.0 and DBOS 3.4.0 from PyPI, in a virtual environment that
#     scripts/postgres-peers/setup.sh makes (.build-peers-venv): submissions at the same
#     producer counts, and pgqueuer's drain of 10^5 due jobs by 3 worker processes.
# Every figure is a JSON line in .build-bench/postgres-run-N.jsonl; scripts/postgres-report.py
# writes the median and the spread of the runs into BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=3
report_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --report) report_only=1; shift ;;
    *) echo "usage: $0 [--runs N] [--report]" >&2; exit 2 ;;
  esac
done

out=.build-bench
if [[ $report_only -eq 0 ]]; then
  mkdir -p "$out"
  rm -f "$out"/postgres-run-*.jsonl
  swift build -c release --package-path Postgres --product dpd-postgres-demo
  swift build -c release --package-path Postgres --product dpd-postgres-bench
  python="$(scripts/postgres-peers/setup.sh | tail -1)"
  bench=Postgres/.build/release/dpd-postgres-bench
  pgbench_script="$out/delay.pgbench"
  "$bench" --pgbench-script pgbench >"$pgbench_script"
  # The table every point starts from (see dpd-postgres-bench): 10^5 pending keys of another
  # queue, statistics taken.
  reset_sql="$out/reset.sql"
  "$bench" --reset-sql >"$reset_sql"
  export DPD_POSTGRES_STATE="$PWD/$out/postgres-bench.state"
  trap 'scripts/postgres.sh stop >/dev/null 2>&1 || true' EXIT

  for run in $(seq 1 "$runs"); do
    file="$out/postgres-run-$run.jsonl"
    scripts/postgres.sh stop >/dev/null 2>&1 || true
    url="$(scripts/postgres.sh start)"
    export DPD_POSTGRES_URL="$url"
    read -r load1 load5 load15 _ </proc/loadavg
    printf '{"figure": "load", "value": %s, "load5": %s, "load15": %s, "unit": "", "started": "%s"}\n' \
      "$load1" "$load5" "$load15" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$file"
    echo "run $run of $runs: load average $load1 $load5 $load15" >&2

    "$bench" | tee -a "$file"

    for clients in 1 8 64; do
      psql -q "$url" -f "$reset_sql"
      tps="$(pgbench -n -c "$clients" -j 2 -T 5 -M prepared -f "$pgbench_script" "$url" |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
      [[ -n "$tps" ]] || { echo "pgbench with $clients clients printed no tps" >&2; exit 1; }
      printf '{"contender": "pgbench", "figure": "submit", "mix": "distinct", "producers": %s, "value": %s, "unit": "/s", "note": "delay'"'"'s statement, one row per transaction, -M prepared"}\n' \
        "$clients" "$tps" | tee -a "$file"
    done
    psql -q "$url" -c "TRUNCATE dpd_bursts"

    "$python" scripts/postgres-peers/pgqueuer_bench.py | tee -a "$file"
    if [[ -f scripts/postgres-peers/dbos_bench.py ]]; then
      "$python" scripts/postgres-peers/dbos_bench.py | tee -a "$file"
    fi
    scripts/postgres.sh stop >/dev/null
  done
fi

python3 scripts/postgres-report.py "$out"/postgres-run-*.jsonl
