#!/usr/bin/env bash
# A throwaway PostgreSQL 15 for the Postgres package's tests, benchmarks and the worker.
#
#   scripts/postgres.sh start   # starts one (or finds the running one) and prints its URL
#   scripts/postgres.sh url     # prints the URL of the running one
#   scripts/postgres.sh stop    # stops it and removes its data directory
#   scripts/postgres.sh restart # pg_ctl restart -m fast: the outage of a database restart
#   scripts/postgres.sh down    # pg_ctl stop -m fast, keeping the data: an outage until `up`
#   scripts/postgres.sh up      # starts the stopped server again, on the same port
#   scripts/postgres.sh freeze  # SIGSTOP the postmaster: new connections get no answer
#   scripts/postgres.sh thaw    # SIGCONT the postmaster
#   scripts/postgres.sh pause   # SIGSTOP the postmaster and every process of the server: a
#                               # server that answers nothing, on open connections or new ones
#   scripts/postgres.sh resume  # SIGCONT them all
#   scripts/postgres.sh tls CERT KEY  # serve TLS with this certificate and key (PEM), as ssl=on
#   scripts/postgres.sh tls off       # serve no TLS again
#   scripts/postgres.sh standby FILE [NAME]
#                                     # make a hot standby of this server (pg_basebackup -R,
#                                     # streaming), start it on a free port, write its state to
#                                     # FILE and print its URL: a read-only node, which
#                                     # `DPD_POSTGRES_STATE=FILE scripts/postgres.sh …` controls.
#                                     # NAME, its cluster_name, is the application_name it
#                                     # streams as, which synchronous_standby_names can name
#   scripts/postgres.sh promote       # pg_ctl promote: a standby becomes a writable primary
#   scripts/postgres.sh crash         # pg_ctl stop -m immediate, keeping the data: a primary
#                                     # that dies (no shutdown checkpoint); `up` starts it again
#
# The server uses Debian's packages (installed with apt-get when `initdb` is missing), keeps its
# data in a fresh temporary directory owned by `postgres`, listens on 127.0.0.1 only, on a free
# port, and trusts loopback connections. Durability is switched off (fsync, synchronous_commit):
# the data is thrown away anyway. A state file remembers the server, so that `url` and `stop`
# find it again; one state file per checkout, so several checkouts can run one each.
#
# One role is not trusted: `dpd_password_user` must give its password, `dpd_password_secret`,
# over 127.0.0.1 (scram-sha-256; its pg_hba.conf line comes before the trust lines), so that the
# tests can see a wrong password refused (rule P12).
#
# `tls` copies the certificate and key into the data directory (owned by the server's user, the
# key readable by it alone, as PostgreSQL demands), sets `ssl` with ALTER SYSTEM and reloads the
# configuration, then waits until a connection with sslmode=require succeeds (or, for `tls off`,
# fails). The TLS tests give a server of their own a certificate they made with openssl.
#
# Set DPD_POSTGRES_STATE to choose the state file.
set -euo pipefail

# The servers this script starts would inherit every descriptor it did, and keep them open for
# their whole life: a test process's sockets (swift-nio opens them without close-on-exec), whose
# close would then never reach their peer. Only standard input, output and error, and the
# descriptor bash reads this script from (255), stay open.
for fd in /proc/$$/fd/*; do
  fd="${fd##*/}"
  if [[ "$fd" -gt 2 && "$fd" -ne 255 ]]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${DPD_POSTGRES_STATE:-${TMPDIR:-/tmp}/dpd-postgres-$(printf '%s' "$repo" | cksum | cut -d' ' -f1).state}"
database=dpd

log() { printf 'postgres.sh: %s\n' "$*" >&2; }

find_bin() {
  local dir
  for dir in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
      echo "$dir"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

install_server() {
  log "initdb not found; installing Debian's postgresql"
  if [[ $(id -u) -ne 0 ]]; then
    log "not root: install postgresql yourself (apt-get install -y postgresql)"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql postgresql-contrib >/dev/null
}

# Runs a command as the server's owner: `postgres` when we are root (initdb refuses root).
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

# Starts the server of $DIR on $PORT, loopback only, durability off. The Postgres suites run in
# parallel, each test with a client of its own (a pool of up to 20 connections), and workers in
# processes of their own: 500 connections leave them room on a loaded machine.
start_server() {
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start -o \
    "-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$DIR \
     -c max_connections=500 -c fsync=off -c synchronous_commit=off \
     -c full_page_writes=off" >/dev/null
}

# Starts the server of $DIR on a free port, which it sets in $PORT; tries five ports, and says
# which of them failed as "$1 on port N failed".
start_on_free_port() {
  local attempt
  for attempt in 1 2 3 4 5; do
    PORT="$(free_port)"
    if start_server; then
      return 0
    fi
    log "$1 on port $PORT failed (attempt $attempt)"
    tail -5 "$DIR/server.log" >&2 || true
  done
  exit 1
}

read_state() {
  [[ -f "$state" ]] || return 1
  # shellcheck disable=SC1090
  source "$state"
  [[ -n "${DIR:-}" && -n "${PORT:-}" && -n "${URL:-}" ]]
}

is_running() {
  read_state || return 1
  [[ -d "$DIR/data" ]] || return 1
  as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

start() {
  if is_running; then
    echo "$URL"
    return 0
  fi
  stop_quietly
  BIN="$(find_bin)" || {
    install_server
    BIN="$(find_bin)"
  }
  DIR="$(mktemp -d "${TMPDIR:-/tmp}/dpd-postgres.XXXXXX")"
  chmod 755 "$DIR"
  if [[ $(id -u) -eq 0 ]]; then chown postgres: "$DIR"; fi
  as_owner "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --no-sync \
    >"$DIR/initdb.log" 2>&1 || {
    cat "$DIR/initdb.log" >&2
    exit 1
  }
  start_on_free_port start
  as_owner "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$database"
  add_password_user
  URL="postgres://postgres@127.0.0.1:$PORT/$database"
  printf 'BIN=%q\nDIR=%q\nPORT=%q\nURL=%q\n' "$BIN" "$DIR" "$PORT" "$URL" >"$state"
  echo "$URL"
}

# Creates `dpd_password_user` and makes it authenticate with its password over 127.0.0.1: its
# pg_hba.conf line goes before the trust lines, then the server reloads its configuration.
add_password_user() {
  local psql="$BIN/psql" hba="$DIR/data/pg_hba.conf"
  [[ -x "$psql" ]] || psql="$(command -v psql)"
  as_owner "$psql" -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE dpd_password_user LOGIN PASSWORD 'dpd_password_secret'" >/dev/null
  as_owner sh -c "{ echo 'host all dpd_password_user 127.0.0.1/32 scram-sha-256'; cat '$hba'; } \
    >'$hba.new' && mv '$hba.new' '$hba'"
  as_owner "$BIN/pg_ctl" -D "$DIR/data" reload >/dev/null
  # Reloading is asynchronous: wait until a wrong password is refused.
  for _ in $(seq 1 50); do
    if ! as_owner env PGPASSWORD=wrong "$psql" -w -h 127.0.0.1 -p "$PORT" \
      -U dpd_password_user -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  log "pg_hba.conf for dpd_password_user did not take effect"
  exit 1
}

stop_quietly() {
  read_state || {
    rm -f "$state"
    return 0
  }
  if [[ -d "$DIR/data" ]]; then
    as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  case "$DIR" in
  "${TMPDIR:-/tmp}"/dpd-postgres.*) rm -rf "$DIR" ;;
  esac
  rm -f "$state"
}

# Runs SQL as the superuser on the running server.
superuser_sql() {
  local psql="$BIN/psql"
  [[ -x "$psql" ]] || psql="$(command -v psql)"
  as_owner "$psql" -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1" \
    >/dev/null
}

# Serves TLS with the certificate $1 and key $2, or none with `off`; returns once a connection
# with sslmode=require succeeds (or, with `off`, is refused).
set_tls() {
  local psql="$BIN/psql" want
  [[ -x "$psql" ]] || psql="$(command -v psql)"
  if [[ "${1:-}" == off ]]; then
    superuser_sql "ALTER SYSTEM SET ssl = off"
    want=off
  else
    [[ -f "${1:-}" && -f "${2:-}" ]] || {
      log "usage: $0 tls CERT KEY (PEM files) | tls off"
      exit 2
    }
    install -m 644 "$1" "$DIR/data/dpd-server.crt"
    install -m 600 "$2" "$DIR/data/dpd-server.key"
    if [[ $(id -u) -eq 0 ]]; then chown postgres: "$DIR/data/dpd-server.crt" "$DIR/data/dpd-server.key"; fi
    superuser_sql "ALTER SYSTEM SET ssl_cert_file = 'dpd-server.crt'"
    superuser_sql "ALTER SYSTEM SET ssl_key_file = 'dpd-server.key'"
    superuser_sql "ALTER SYSTEM SET ssl = on"
    want=on
  fi
  as_owner "$BIN/pg_ctl" -D "$DIR/data" reload >/dev/null
  # Reloading is asynchronous, and a certificate the server cannot load leaves the old setting.
  for _ in $(seq 1 100); do
    if as_owner "$psql" -w "host=127.0.0.1 port=$PORT user=postgres dbname=postgres sslmode=require" \
      -Atc 'SELECT 1' >/dev/null 2>&1; then
      [[ $want == on ]] && return 0
    elif [[ $want == off ]]; then
      return 0
    fi
    sleep 0.05
  done
  log "tls $want did not take effect; the server's log says:"
  tail -5 "$DIR/server.log" >&2 || true
  exit 1
}

# Makes a hot standby of the running server in a fresh directory, streaming from it, starts it
# on a free port, and writes its state to $1 (so that the other commands control it with
# DPD_POSTGRES_STATE=$1). Prints its URL once it accepts read-only connections.
make_standby() {
  local target="$1" name="${2:-}" primary_port="$PORT" standby_dir psql="$BIN/psql"
  [[ -x "$psql" ]] || psql="$(command -v psql)"
  standby_dir="$(mktemp -d "${TMPDIR:-/tmp}/dpd-postgres.XXXXXX")"
  chmod 755 "$standby_dir"
  if [[ $(id -u) -eq 0 ]]; then chown postgres: "$standby_dir"; fi
  as_owner "$BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$standby_dir/data" \
    -R -X stream --checkpoint=fast --no-sync >"$standby_dir/basebackup.log" 2>&1 || {
    cat "$standby_dir/basebackup.log" >&2
    exit 1
  }
  if [[ -n "$name" ]]; then
    as_owner sh -c "echo \"cluster_name = '$name'\" >>'$standby_dir/data/postgresql.auto.conf'"
  fi
  DIR="$standby_dir"
  start_on_free_port "standby start"
  URL="postgres://postgres@127.0.0.1:$PORT/$database"
  printf 'BIN=%q\nDIR=%q\nPORT=%q\nURL=%q\n' "$BIN" "$DIR" "$PORT" "$URL" >"$target"
  for _ in $(seq 1 100); do
    if as_owner "$psql" -w -h 127.0.0.1 -p "$PORT" -U postgres -d "$database" -Atc \
      'SELECT pg_is_in_recovery()' 2>/dev/null | grep -qx t; then
      echo "$URL"
      return 0
    fi
    sleep 0.1
  done
  log "the standby did not accept connections; its log says:"
  tail -5 "$DIR/server.log" >&2 || true
  exit 1
}

postmaster_pid() {
  head -1 "$DIR/data/postmaster.pid"
}

case "${1:-}" in
start) start ;;
restart)
  is_running || {
    log "no server running"
    exit 1
  }
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 60 restart -l "$DIR/server.log" >/dev/null
  ;;
down)
  is_running || {
    log "no server running"
    exit 1
  }
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 60 stop >/dev/null
  ;;
up)
  read_state || {
    log "no server known (state file: $state)"
    exit 1
  }
  is_running || start_server
  ;;
freeze)
  is_running || {
    log "no server running"
    exit 1
  }
  kill -STOP "$(postmaster_pid)"
  ;;
thaw)
  read_state && kill -CONT "$(postmaster_pid)"
  ;;
pause)
  is_running || {
    log "no server running"
    exit 1
  }
  pm="$(postmaster_pid)"
  # Its children first, so that none of them sees its postmaster stopped while it runs on.
  for pid in $(ps -o pid= --ppid "$pm"); do kill -STOP "$pid" 2>/dev/null || true; done
  kill -STOP "$pm"
  ;;
resume)
  read_state || exit 0
  pm="$(postmaster_pid)"
  kill -CONT "$pm"
  for pid in $(ps -o pid= --ppid "$pm"); do kill -CONT "$pid" 2>/dev/null || true; done
  ;;
tls)
  is_running || {
    log "no server running"
    exit 1
  }
  set_tls "${2:-}" "${3:-}"
  ;;
standby)
  is_running || {
    log "no server running"
    exit 1
  }
  [[ -n "${2:-}" ]] || {
    log "usage: $0 standby STATE_FILE"
    exit 2
  }
  make_standby "$2" "${3:-}"
  ;;
crash)
  is_running || {
    log "no server running"
    exit 1
  }
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w -t 60 stop >/dev/null
  ;;
promote)
  is_running || {
    log "no server running"
    exit 1
  }
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -w -t 60 promote >/dev/null
  ;;
url)
  if is_running; then
    echo "$URL"
  else
    log "no server running (state file: $state); run: scripts/postgres.sh start"
    exit 1
  fi
  ;;
stop)
  if read_state; then
    stop_quietly
    log "stopped"
  else
    log "nothing to stop"
  fi
  ;;
*)
  echo "usage: $0 start|stop|url|restart|down|up|freeze|thaw|pause|resume|tls CERT KEY|tls off|standby FILE [NAME]|promote|crash" >&2
  exit 2
  ;;
esac
