#!/usr/bin/env bash
# Builds the DocC documentation of every module that has a catalog (Sources/<Module>/<Module>.docc) with
# swift-docc-plugin, treating every DocC warning (an unresolved ``symbol`` link, a missing article, …) as an error.
#
#   scripts/docs.sh                      every catalogued module
#   scripts/docs.sh NearbyConnections    only the modules named
#
# Archives go to $NEARBY_DOCS_DIR (default .build-docs/, git-ignored), one <Module>.doccarchive each; open one with
# `swift package --disable-sandbox preview-documentation --target <Module>`. Exits non-zero when any module has a
# warning or fails to build, after trying them all, and names those modules.
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
failed=()
started=$SECONDS
for module in "${modules[@]}"; do
    # The plugin stops at the first target whose docs fail, so each module runs on its own: one run reports every
    # broken module. Symbol graphs come from the same debug build as `swift build` (.build/), so after a build only
    # the symbol extraction and the DocC conversion run here.
    echo "== docs: $module"
    module_started=$SECONDS
    if swift package --disable-sandbox --allow-writing-to-directory "$out" \
        generate-documentation --target "$module" --output-path "$out/$module.doccarchive" \
        --warnings-as-errors --disable-indexing; then
        echo "== docs: $module ok ($((SECONDS - module_started)) s)"
    else
        echo "== docs: $module FAILED ($((SECONDS - module_started)) s)" >&2
        failed+=("$module")
    fi
done

echo "== docs: ${#modules[@]} modules in $((SECONDS - started)) s, archives in $out/"
if ((${#failed[@]} > 0)); then
    echo "docs.sh: documentation warnings or errors in: ${failed[*]}" >&2
    exit 1
fi
