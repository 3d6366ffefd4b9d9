#!/usr/bin/env bash
# Throughput of Android's two BLE data paths (the Weave GATT socket, framed L2CAP with the socket layer), each
# against the same bytes over a bare L2CAP channel in the same run, between two of our hosts on a fresh pair of
# linked Bumble virtual controllers per run (docs/BLE-ANDROID.md).
#
#   Benchmarks/ble-sockets.sh [--runs N] [--bytes BYTES]      (defaults: 3 runs, 300000 bytes)
#
# One JSON line per run from `nearby-bench ble-sockets --json`. Only processes started here are ended, by PID.
# Needs scripts/install-deps.sh and `swift build -c release --product nearby-bench`.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
runs=3
bytes=300000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --bytes) bytes="$2"; shift 2 ;;
        *) echo "usage: $0 [--runs N] [--bytes BYTES]" >&2; exit 2 ;;
    esac
done
python=".venv/bin/python"
bench="${NEARBY_BENCH:-$(swift build -c release --show-bin-path)/nearby-bench}"
work="$(mktemp -d)"
pid=""
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for ((run = 1; run <= runs; run++)); do
    "$python" Tests/BLE/controllers.py 2 > "$work/controllers.log" 2>&1 &
    pid=$!
    until grep -q READY "$work/controllers.log"; do
        kill -0 "$pid" 2>/dev/null || { cat "$work/controllers.log" >&2; exit 1; }
        sleep 0.05
    done
    read -r _ port0 port1 < <(grep READY "$work/controllers.log")
    "$bench" ble-sockets --hci "tcp:127.0.0.1:$port0" --hci "tcp:127.0.0.1:$port1" --bytes "$bytes" --json
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
done
