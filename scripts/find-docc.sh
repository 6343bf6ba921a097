# Sourced by the docs scripts: sets `docc` to the toolchain's DocC (set DOCC to use a specific
# docc binary) and defines `convert_docs`.
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

# Copies MODULE's own symbol graphs from GRAPHS_DIR into MODULE_GRAPHS_DIR, made empty first:
# docc documents one module per archive, so it gets only the module's graphs (its own, and its
# extensions of other modules, `Module@Other.symbols.json`), never its dependencies'.
#   stage_module_graphs MODULE GRAPHS_DIR MODULE_GRAPHS_DIR
stage_module_graphs() {
  local module="$1" graphs="$2" module_graphs="$3"
  rm -rf "$module_graphs"
  mkdir -p "$module_graphs"
  cp "$graphs/$module.symbols.json" "$module_graphs/"
  shopt -s nullglob
  for extension in "$graphs/$module@"*.symbols.json; do cp "$extension" "$module_graphs/"; done
  shopt -u nullglob
}

# Converts one module's catalog and symbol graphs into a documentation archive; stops the script
# on any DocC warning or error.
#   convert_docs MODULE CATALOG GRAPHS_DIR ARCHIVE LOG
convert_docs() {
  local module="$1" catalog="$2" graphs="$3" archive="$4" log="$5"
  if ! "$docc" convert "$catalog" \
    --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name "$module" \
    --fallback-bundle-identifier "$module" \
    --output-path "$archive" \
    --warnings-as-errors >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: docc failed for $module (warnings count as errors)" >&2
    exit 1
  fi
  # Belt and braces: DocC promotes warnings to errors above, but never accept one that slips by.
  if grep -qiE '(^|[^a-z])(warning|error):' "$log"; then
    cat "$log" >&2
    echo "error: docc reported problems for $module" >&2
    exit 1
  fi
}
