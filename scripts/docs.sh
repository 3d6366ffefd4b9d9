#!/usr/bin/env bash
# Builds the DocC documentation of every module that has a catalog (Sources/<Module>/<Module>.docc) with
# swift-docc-plugin, treating every DocC warning (an unresolved ``symbol`` link, a missing article, …) as an error.
#
#   scripts/docs.sh                      every catalogued module
#   scripts/docs.sh NearbyConnections    only the modules named
#
# Archives go to $NEARBY_DOCS_DIR (default .build-docs/, git-ignored), one <Module>.doccarchive each; open one with
# `swift package --disable-sandbox preview-documentation --target <Module>`. Exits non-zero when any module has a
# warning or fails to build, after trying them all, and names those modules. Needs a Swift toolchain with `docc`
# (Swift 6.x on Linux ships it); the plugin and its dependencies come from Package.swift.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${NEARBY_DOCS_DIR:-.build-docs}"
if (($# > 0)); then
    modules=("$@")
else
    modules=()
    for catalog in Sources/*/*.docc; do
        module="$(basename "$(dirname "$catalog")")"
        [[ "$(basename "$catalog" .docc)" == "$module" ]] && modules+=("$module")
    done
fi
if ((${#modules[@]} == 0)); then
    echo "docs.sh: no documentation catalogs under Sources/" >&2
    exit 1
fi

mkdir -p "$out"
started=$SECONDS
generate() { # generate <output path> <module>...
    local output="$1" targets=()
    shift
    for module in "$@"; do targets+=(--target "$module"); done
    swift package --disable-sandbox --allow-writing-to-directory "$out" \
        generate-documentation "${targets[@]}" --output-path "$output" --warnings-as-errors --disable-indexing
}

# One plugin run for all modules is the fast path (one tool build, symbol graphs from the same debug build as
# `swift build`). With more than one target the plugin writes <Module>.doccarchive into the output directory.
echo "== docs: ${modules[*]}"
if ((${#modules[@]} == 1)); then
    status=0; generate "$out/${modules[0]}.doccarchive" "${modules[0]}" || status=$?
else
    status=0; generate "$out" "${modules[@]}" || status=$?
fi
if ((status == 0)); then
    echo "== docs: ${#modules[@]} modules in $((SECONDS - started)) s, archives in $out/"
    exit 0
fi

# Something warned. The plugin gives up at the first broken module, so build each module on its own to name
# (and show the diagnostics of) every broken one.
echo "== docs: warnings or errors; building each module on its own to find them all" >&2
failed=()
for module in "${modules[@]}"; do
    echo "== docs: $module"
    module_started=$SECONDS
    if generate "$out/$module.doccarchive" "$module"; then
        echo "== docs: $module ok ($((SECONDS - module_started)) s)"
    else
        echo "== docs: $module FAILED ($((SECONDS - module_started)) s)" >&2
        failed+=("$module")
    fi
done
echo "docs.sh: documentation warnings or errors in: ${failed[*]:-(none on the second try)}" >&2
exit 1
