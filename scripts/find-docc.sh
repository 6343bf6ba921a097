# Sourced by the docs scripts: sets `docc` to the toolchain's DocC. Set DOCC to use a specific
# docc binary.
find_docc() {
  if [[ -n "${DOCC:-}" ]]; then
    echo "$DOCC"
  elif command -v docc >/dev/null 2>&1; then
    command -v docc
  elif command -v xcrun >/dev/null 2>&1 && xcrun --find docc >/dev/null 2>&1; then
    xcrun --find docc
  else
    # On Linux, docc ships next to swift in the toolchain's usr/bin.
    local swift_bin
    swift_bin="$(dirname "$(readlink -f "$(command -v swift)")")"
    [[ -x "$swift_bin/docc" ]] || {
      echo "error: docc not found; set DOCC or put the toolchain's docc on PATH" >&2
      exit 1
    }
    echo "$swift_bin/docc"
  fi
}
docc="$(find_docc)"
