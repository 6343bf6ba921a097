#!/usr/bin/env bash
# Builds the DocC documentation with the toolchain's own `docc`, so the package needs no plugin
# and no dependency. Fails on any DocC warning.
#
#   scripts/build-docs.sh
#
# Output (git-ignored):
#   docs-output/DelayedPreemptiveDispatch.doccarchive         the library, with its catalog
#   docs-output/DelayedPreemptiveDispatchTesting.doccarchive  ManualClock
#
# Set DOCC to use a specific docc binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

modules=(DelayedPreemptiveDispatch DelayedPreemptiveDispatchTesting)
build_path="$root/.build/docs"
graphs="$build_path/symbol-graphs"
output="$root/docs-output"

# shellcheck source=scripts/find-docc.sh
source "$root/scripts/find-docc.sh"

# Emits the symbol graphs while compiling. A separate build path keeps these compiler flags from
# invalidating the regular `.build` products. It starts clean every time: an up-to-date module is
# not recompiled, so an incremental build could leave a stale or missing graph behind.
echo "Building symbol graphs in ${build_path#"$root"/}"
rm -rf "$build_path"
mkdir -p "$graphs"
swift build --target DelayedPreemptiveDispatchTesting --build-path "$build_path" \
  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs"

rm -rf "$output"
mkdir -p "$output"
for module in "${modules[@]}"; do
  module_graphs="$build_path/module-graphs/$module"
  stage_module_graphs "$module" "$graphs" "$module_graphs"

  # Always name a catalog: without one, docc searches the working directory for any `.docc`
  # folder and may pick up another module's. A module without a catalog gets an empty one.
  catalog="Sources/$module/$module.docc"
  if [[ ! -d "$catalog" ]]; then
    catalog="$build_path/empty-catalogs/$module.docc"
    mkdir -p "$catalog"
  fi

  echo "Converting $module"
  log="$build_path/$module.docc.log"
  convert_docs "$module" "$catalog" "$module_graphs" "$output/$module.doccarchive" "$log"
done

echo "Documentation built with no warnings:"
for module in "${modules[@]}"; do echo "  docs-output/$module.doccarchive"; done
