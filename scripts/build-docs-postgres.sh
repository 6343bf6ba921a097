#!/usr/bin/env bash
# Builds the DocC documentation of the PostgreSQL package's module,
# DelayedPreemptiveDispatchPostgres, with the toolchain's own `docc`, as scripts/build-docs.sh
# does for the root package. Fails on any DocC warning, which covers the module's catalog and
# the doc comments of its public symbols.
#
#   scripts/build-docs-postgres.sh           # reuses the package's build in Postgres/.build
#   scripts/build-docs-postgres.sh --clean   # removes the documentation output first
#
# Output (git-ignored, under Postgres/.build):
#   Postgres/.build/docs/DelayedPreemptiveDispatchPostgres.doccarchive
#
# The symbol graph comes from `swift package dump-symbol-graph`, which builds the package in its
# regular build path with the flags below, the ones .ci/run builds and tests it with, and then
# extracts the graph from the built module: after .ci/run's build, or a developer's
# `swift build --package-path Postgres --build-tests -Xswiftc -warnings-as-errors`, nothing is
# compiled again. (Emitting the graph while compiling would need a second build of PostgresNIO,
# SwiftNIO and BoringSSL with other flags: minutes on 2 cores.)
# Set DOCC to use a specific docc binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

module=DelayedPreemptiveDispatchPostgres
package="$root/Postgres"
build_path="$package/.build/docs"
module_graphs="$build_path/module-graphs"
catalog="$package/Sources/$module/$module.docc"
archive="$build_path/$module.doccarchive"
# The flags of .ci/run's Postgres build; scripts/check-snippets.py --postgres uses them too.
flags=(-Xswiftc -warnings-as-errors)

if [[ "${1:-}" == "--clean" ]]; then
  rm -rf "$build_path"
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--clean]" >&2
  exit 2
fi

# shellcheck source=scripts/find-docc.sh
source "$root/scripts/find-docc.sh"

echo "Building and extracting the symbol graph of $module"
mkdir -p "$build_path"
log="$build_path/dump-symbol-graph.log"
if ! swift package --package-path "$package" "${flags[@]}" dump-symbol-graph \
  --minimum-access-level public >"$log" 2>&1; then
  cat "$log" >&2
  echo "error: swift package dump-symbol-graph failed" >&2
  exit 1
fi
graphs="$(sed -n 's/^Files written to //p' "$log" | tail -1)"
if [[ -z "$graphs" || ! -s "$graphs/$module.symbols.json" ]]; then
  cat "$log" >&2
  echo "error: no symbol graph for $module" >&2
  exit 1
fi

stage_module_graphs "$module" "$graphs" "$module_graphs"

echo "Converting $module"
log="$build_path/$module.docc.log"
rm -rf "$archive"
convert_docs "$module" "$catalog" "$module_graphs" "$archive" "$log"

echo "Documentation built with no warnings:"
echo "  ${archive#"$root"/}"
