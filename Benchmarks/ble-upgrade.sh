#!/usr/bin/env bash
# What the BLE -> Wi-Fi LAN bandwidth upgrade buys, on Bumble virtual controllers, in the test namespace:
#
#   Benchmarks/ble-upgrade.sh [--bytes N] [--ble-bytes N] [--json]
#
# Starts four linked virtual controllers (Tests/BLE/controllers.py) inside scripts/with-test-network.sh (whose
# veth pair gives the upgrade a non-loopback address) and runs `nearby-bench ble-upgrade`: a file over BLE with
# the upgrade off, the time from connected to both sides on Wi-Fi LAN, a file after the upgrade, and a plain TCP
# copy of the same file in the same run. Only processes started here are ended, by PID. Needs
# scripts/install-deps.sh (the .venv with bumble==0.0.236), root, and `swift build -c release --product nearby-bench`.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
bench="$(swift build -c release --show-bin-path)/nearby-bench"
if [[ "${NEARBY_TEST_NETNS:-}" != 1 ]]; then
    exec scripts/with-test-network.sh bash "$0" "$@"
fi
work="$(mktemp -d)"
controllers=""
cleanup() {
    if [[ -n "$controllers" ]]; then kill "$controllers" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
.venv/bin/python Tests/BLE/controllers.py 4 > "$work/controllers.log" 2>&1 &
controllers=$!
for _ in $(seq 200); do grep -q READY "$work/controllers.log" && break; sleep 0.05; done
read -r -a ports <<< "$(awk '/READY/ {print $2, $3, $4, $5}' "$work/controllers.log")"
if ((${#ports[@]} != 4)); then
    echo "the controllers did not start:" >&2
    cat "$work/controllers.log" >&2
    exit 1
fi
args=()
for port in "${ports[@]}"; do args+=(--hci "tcp:127.0.0.1:$port"); done
"$bench" ble-upgrade "${args[@]}" "$@"
