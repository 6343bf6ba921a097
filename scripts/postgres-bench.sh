#!/usr/bin/env bash
# The PostgreSQL package's figures, once, against a throwaway server (see BENCHMARKS.md):
# dpd-postgres-bench (client floor, delay throughput, drain, fire lateness), then pgbench with
# the same upsert, 8 clients, prepared statements, as delay's baseline.
#
#   scripts/postgres-bench.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

url="$(scripts/postgres.sh start)"
swift build -c release --package-path Postgres --product dpd-postgres-worker
swift build -c release --package-path Postgres --product dpd-postgres-bench
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
DPD_POSTGRES_URL="$url" Postgres/.build/release/dpd-postgres-bench
pgbench -n -c 8 -j 2 -t 5000 -M prepared -f scripts/postgres-upsert.pgbench "$url" |
  grep -E '^(tps|latency average)'
psql -q "$url" -c "DELETE FROM dpd_bursts WHERE name = 'pgbench'"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
