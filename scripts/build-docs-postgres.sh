#!/usr/bin/env bash
# Builds the DocC documentation of the PostgreSQL package's module,
# DelayedPreemptiveDispatchPostgres, with the toolchain's own `docc`, as scripts/build-docs.sh
# does for the root package. Fails on any DocC warning, which covers the module's catalog and
# the doc comments of its public symbols.
#
#   scripts/build-docs-postgres.sh           # reuses the dependencies built by an earlier run
#   scripts/build-docs-postgres.sh --clean   # starts from an empty build path
#
# Output (git-ignored, under Postgres/.build):
#   Postgres/.build/docs/DelayedPreemptiveDispatchPostgres.doccarchive
#
# The first run compiles the package's dependencies (PostgresNIO, SwiftNIO, BoringSSL, ...)
# with the symbol graph flags: several minutes on 2 cores. Later runs recompile only the module.
# Set DOCC to use a specific docc binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

module=DelayedPreemptiveDispatchPostgres
package="$root/Postgres"
build_path="$package/.build/docs"
graphs="$build_path/symbol-graphs"
module_graphs="$build_path/module-graphs"
catalog="$package/Sources/$module/$module.docc"
archive="$build_path/$module.doccarchive"

if [[ "${1:-}" == "--clean" ]]; then
  rm -rf "$build_path"
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--clean]" >&2
  exit 2
fi

# shellcheck source=scripts/find-docc.sh
source "$root/scripts/find-docc.sh"

build() {
  swift build --package-path "$package" --target "$module" --build-path "$build_path" \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" "$@"
}

# A separate build path keeps the symbol graph flags from invalidating the package's regular
# `.build` products. An up-to-date module is not recompiled and so emits no graph: remove this
# module's emitted module (not its dependencies', which take minutes to build, nor its build
# plan) and its old graphs, so that the build below emits the module, and its graph, again.
echo "Building symbol graphs in ${build_path#"$root"/}"
if [[ -d "$build_path" ]] && bin="$(build --show-bin-path 2>/dev/null)"; then
  rm -f "$bin/Modules/$module".*
fi
mkdir -p "$graphs"
rm -f "$graphs/$module.symbols.json" "$graphs/$module@"*.symbols.json
build

if [[ ! -s "$graphs/$module.symbols.json" ]]; then
  echo "error: the build wrote no symbol graph for $module" >&2
  exit 1
fi

stage_module_graphs "$module" "$graphs" "$module_graphs"

echo "Converting $module"
log="$build_path/$module.docc.log"
rm -rf "$archive"
convert_docs "$module" "$catalog" "$module_graphs" "$archive" "$log"

echo "Documentation built with no warnings:"
echo "  ${archive#"$root"/}"
