#!/usr/bin/env bash
# Creates (or reuses) the peers' virtualenv at .build-peers-venv under the repo root, installs
# scripts/postgres-peers/requirements.txt into it, and prints the venv's python path.
#
#   py="$(scripts/postgres-peers/setup.sh)"
#   DPD_POSTGRES_URL="$(scripts/postgres.sh start)" "$py" scripts/postgres-peers/pgqueuer_bench.py
#
# pip's output goes to stderr; stdout is the python path only. Set PYTHON to choose the
# interpreter that creates the venv (default: python3, which must be 3.10 or later).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.build-peers-venv"
requirements="$here/requirements.txt"
python="${PYTHON:-python3}"

log() { printf 'postgres-peers/setup.sh: %s\n' "$*" >&2; }

"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || {
  log "$python is older than 3.10 (pgqueuer and dbos need 3.10+)"
  exit 1
}

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" >&2 2>&1; then
    # Debian's python3 lacks ensurepip until python3-venv is installed.
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      log "python3 -m venv failed; installing Debian's python3-venv"
      rm -rf "$venv"
      DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
      "$python" -m venv "$venv" >&2
    else
      log "cannot create a venv with $python (install python3-venv)"
      exit 1
    fi
  fi
fi

# Skip pip when the installed set already matches the requirements (a stamp of their hash).
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  log "installing $(grep -cvE '^\s*(#|$)' "$requirements") pinned packages into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
  echo "$want" >"$stamp"
fi

"$venv/bin/python" -c 'import pgqueuer, asyncpg, dbos' >&2 || {
  log "the venv at $venv does not import pgqueuer, asyncpg and dbos"
  exit 1
}
echo "$venv/bin/python"
