#!/usr/bin/env bash
# L2CAP LE CoC throughput of the NearbyBLE host vs bumble-bench, in the same run, on Bumble virtual controllers.
#
#   Benchmarks/ble-l2cap.sh [BYTES]      (default 1000000)
#
# 1. ours:   nearby-bench ble-l2cap (our host, central) <-> Tests/BLE/peer.py echo (Bumble host, peripheral);
#            bytes per second per direction of an echo (both directions run at once).
# 2. bumble: bumble-bench l2cap-client send -> l2cap-server receive (Bumble host to Bumble host, one way).
# Each side gets a fresh pair of linked virtual controllers on 127.0.0.1. Only processes started here are ended,
# by PID. Needs scripts/install-deps.sh (the .venv with bumble==0.0.236) and `swift build -c release --product nearby-bench`.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
bytes="${1:-1000000}"
python=".venv/bin/python"
bench="$(swift build -c release --show-bin-path)/nearby-bench"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

start_controllers() {  # -> sets ports
    "$python" Tests/BLE/controllers.py 2 > "$work/ctrl$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do grep -q READY "$work/ctrl$1.log" && break; sleep 0.05; done
    read -r port_a port_b <<< "$(awk '/READY/ {print $2, $3}' "$work/ctrl$1.log")"
}

wait_for() {  # file pattern
    for _ in $(seq 400); do grep -q "$2" "$1" && return 0; sleep 0.05; done
    echo "timed out waiting for $2 in $1" >&2; cat "$1" >&2; exit 1
}

# 1. Our host against the Bumble echo peer (MTU 2048, MPS 1024, 64 credits on the Bumble side).
start_controllers 1
"$python" Tests/BLE/peer.py echo "$port_a" C0:00:00:00:00:0A 129 2048 1024 64 > "$work/echo.log" 2>&1 &
pids+=($!)
wait_for "$work/echo.log" READY
ours="$("$bench" ble-l2cap --hci "tcp:127.0.0.1:$port_b" --peer C0:00:00:00:00:0A --psm 129 --bytes "$bytes" --sdu 1000 --json)"
echo "$ours"

# 2. bumble-bench: Bumble host to Bumble host, one way, 1024-byte packets.
start_controllers 2
count=$((bytes / 1024))
.venv/bin/bumble-bench --mode l2cap-server --scenario receive --l2cap-psm 129 peripheral "tcp-client:127.0.0.1:$port_a" \
    > "$work/bench-server.log" 2>&1 &
pids+=($!)
sleep 1.5
timeout 300 .venv/bin/bumble-bench --mode l2cap-client --scenario send --l2cap-psm 129 -s 1024 -c "$count" \
    central --peripheral F1:F1:F1:F1:F1:F1 "tcp-client:127.0.0.1:$port_b" > "$work/bench-client.log" 2>&1 || true
sleep 1
# The sender prints "Speed: average=<bytes/s> (<n> bytes in <t> seconds)" once the receiver acknowledges.
bumble_line="$(sed 's/\x1b\[[0-9;]*m//g' "$work/bench-client.log" | grep -E 'Speed: average=' | tail -1 || true)"
echo "bumble-bench: ${bumble_line#*@@@ }"
bumble_rate="$(echo "$bumble_line" | sed -nE 's/.*average=([0-9]+).*/\1/p')"
ours_rate="$(echo "$ours" | grep -oE '"bytes_per_second":[0-9]+' | cut -d: -f2)"
if [[ -n "${bumble_rate:-}" && -n "${ours_rate:-}" ]]; then
    awk -v o="$ours_rate" -v b="$bumble_rate" 'BEGIN { printf "{\"benchmark\":\"ble_l2cap_ratio\",\"ours_bytes_per_second_per_direction\":%d,\"bumble_bench_bytes_per_second\":%d,\"ratio\":%.2f}\n", o, b, o / b }'
else
    echo "could not parse bumble-bench output:" >&2
    sed 's/\x1b\[[0-9;]*m//g' "$work/bench-client.log" | tail -20 >&2
fi
