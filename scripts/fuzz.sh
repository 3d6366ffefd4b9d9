#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/Sources/NearbyFuzz, docs/FUZZING.md) with -sanitize=fuzzer,address and runs
# each for SECONDS (default 60), seeded from the committed corpus Fuzz/Corpus/<target>/. New corpus entries and
# crash/timeout/leak reproducers go to a scratch directory (NEARBY_FUZZ_WORK, default a fresh mktemp -d), never to
# the committed corpus. Prints a summary table; exits non-zero on any crash, timeout, leak or out-of-memory.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     build, then fuzz every target (or the named ones) in sequence
#   scripts/fuzz.sh --write-seeds             regenerate Fuzz/Corpus from the wire builders (Fuzz/Sources/NearbyFuzz/Seeds.swift)
#   scripts/fuzz.sh --list                    print the target names
#
# Environment: NEARBY_FUZZ_WORK (scratch directory, kept), NEARBY_FUZZ_CONFIG (release|debug, default release),
# NEARBY_FUZZ_SKIP_BUILD=1 (reuse the last build).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

targets_all=(
    framing offline-frame ukey2-server ukey2-client secure-message wifi-lan-service ble-advertisement hci l2cap ble-socket att
    messages-envelope beacons connection-state-machine service-protocol found-lost-flood service-state-file quick-share
    dbus-signals
)

log() { printf 'fuzz: %s\n' "$*" >&2; }

mode=run
seconds=60
targets=()
for arg in "$@"; do
    case "$arg" in
        --write-seeds) mode=seeds ;;
        --list) printf '%s\n' "${targets_all[@]}"; exit 0 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *[!0-9]*) targets+=("$arg") ;;
        *) seconds="$arg" ;;
    esac
done
((${#targets[@]} > 0)) || targets=("${targets_all[@]}")
for target in "${targets[@]}"; do
    [[ " ${targets_all[*]} " == *" $target "* ]] || { log "unknown target '$target' (see --list)"; exit 2; }
done

config="${NEARBY_FUZZ_CONFIG:-release}"
scratch_build="$repo_root/.build-fuzz"
build() {
    # libavahi-client-dev and friends: the fuzz binary links the Wi-Fi LAN module.
    scripts/install-deps.sh
    log "building nearby-fuzz ($config, -sanitize=fuzzer,address)"
    local start=$SECONDS
    NEARBY_FUZZ=1 swift build --scratch-path "$scratch_build" --product nearby-fuzz -c "$config" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing >&2
    log "build took $((SECONDS - start)) s"
}
[[ "${NEARBY_FUZZ_SKIP_BUILD:-0}" == 1 ]] || build
binary="$(NEARBY_FUZZ=1 swift build --scratch-path "$scratch_build" -c "$config" --show-bin-path)/nearby-fuzz"
[[ -x "$binary" ]] || { log "no fuzz binary at $binary"; exit 1; }

if [[ "$mode" == seeds ]]; then
    rm -rf Fuzz/Corpus
    NEARBY_FUZZ_WRITE_SEEDS="$repo_root/Fuzz/Corpus" "$binary"
    log "wrote $(find Fuzz/Corpus -type f | wc -l) seeds ($(du -sh Fuzz/Corpus | cut -f1)) to Fuzz/Corpus"
    exit 0
fi

work="${NEARBY_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/nearby-fuzz.XXXXXX")}"
mkdir -p "$work"
log "scratch directory: $work"

# The Swift runtime's backtracer must not take the crash signals that libFuzzer and ASan report. Leak checking is on
# (libFuzzer's -detect_leaks plus LeakSanitizer at exit); ODR warnings of statically linked dependencies are not ours.
export SWIFT_BACKTRACE="enable=no"
export ASAN_OPTIONS="detect_leaks=1:detect_odr_violation=0:handle_abort=1:${ASAN_OPTIONS:-}"

summary="$work/summary.txt"
printf '%-26s %12s %9s %8s %9s %6s %5s  %s\n' target executions exec/s crashes timeouts leaks ooms result >"$summary"
failed=0
for target in "${targets[@]}"; do
    corpus="$work/corpus/$target"
    artifacts="$work/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    seeds="Fuzz/Corpus/$target"
    [[ -d "$seeds" ]] || mkdir -p "$seeds"
    log "$target: fuzzing for $seconds s"
    status=0
    NEARBY_FUZZ_TARGET="$target" timeout --kill-after=10 $((seconds + 120)) "$binary" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$work/$target.log" 2>&1 || status=$?
    executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$target.log" | tail -1)"
    crashes="$(find "$artifacts" -name 'crash-*' -o -name 'deadly-*' | wc -l)"
    timeouts="$(find "$artifacts" -name 'timeout-*' | wc -l)"
    leaks="$(find "$artifacts" -name 'leak-*' | wc -l)"
    ooms="$(find "$artifacts" -name 'oom-*' | wc -l)"
    result=ok
    if ((status != 0 || crashes + timeouts + leaks + ooms > 0)) || [[ -z "$executions" ]]; then
        result="FAILED (exit $status)"
        failed=1
        log "$target failed; last lines of $work/$target.log:"
        tail -n 40 "$work/$target.log" >&2
        find "$artifacts" -type f -printf '  reproducer: %p\n' >&2
    fi
    printf '%-26s %12s %9s %8s %9s %6s %5s  %s\n' "$target" "${executions:-?}" "${rate:-?}" "$crashes" "$timeouts" \
        "$leaks" "$ooms" "$result" >>"$summary"
done

echo
cat "$summary"
echo "(logs, new corpus entries and reproducers: $work)"
exit "$failed"
