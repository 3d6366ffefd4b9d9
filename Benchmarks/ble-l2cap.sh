#!/usr/bin/env bash
# One-way L2CAP LE CoC throughput of the NearbyBLE host vs bumble-bench's own sender, in the same run, into the same
# receiver, on Bumble virtual controllers.
#
#   Benchmarks/ble-l2cap.sh [--runs N] [--bytes BYTES] [--echo]      (defaults: 3 runs, 1000000 bytes)
#
# Each run measures both senders, each on a fresh pair of linked virtual controllers (127.0.0.1) with a fresh
# receiver: `bumble-bench --mode l2cap-server --scenario receive` as peripheral (MTU 1024, MPS 1024, 128 credits),
# and as central either
#   ours:   nearby-bench ble-l2cap-send (our host), or
#   bumble: bumble-bench --mode l2cap-client --scenario send,
# both sending BYTES/1024 packets of 1024 bytes (one SDU each) in bumble-bench's packet format. The order
# alternates from run to run. Figures come from both ends: the receiver's average from RESET to the last packet
# (the same Bumble process times both senders, so this is the primary figure) and the sender's, from after RESET
# until the receiver's ACK. One JSON line per measurement, then the medians and their ratio per end.
# --echo adds the old figure: our host echoing BYTES through Tests/BLE/peer.py (both directions at once, per
# direction), which has no bumble-bench counterpart.
# Only processes started here are ended, by PID. Needs scripts/install-deps.sh (the .venv with bumble==0.0.236)
# and `swift build -c release --product nearby-bench`.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
runs=3
bytes=1000000
echo_too=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --bytes) bytes="$2"; shift 2 ;;
        --echo) echo_too=1; shift ;;
        *) echo "usage: $0 [--runs N] [--bytes BYTES] [--echo]" >&2; exit 2 ;;
    esac
done
python=".venv/bin/python"
bench="${NEARBY_BENCH:-$(swift build -c release --show-bin-path)/nearby-bench}"
count=$((bytes / 1024))
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

stop_started() {  # ends this measurement's processes (started here, by PID)
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}

start_controllers() {  # name -> sets port_a port_b
    "$python" Tests/BLE/controllers.py 2 > "$work/$1.ctrl" 2>&1 &
    controllers_pid=$!
    pids+=($!)
    wait_for "$work/$1.ctrl" READY
    read -r port_a port_b <<< "$(awk '/READY/ {print $2, $3}' "$work/$1.ctrl")"
}

wait_for() {  # file pattern
    for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    echo "timed out waiting for $2 in $1" >&2; cat "$1" >&2; exit 1
}

plain() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }

cpu_of() {  # pid -> user+system CPU seconds so far, from /proc/PID/stat
    awk -v tick="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / tick }' "/proc/$1/stat" \
        2>/dev/null || echo null
}

children_cpu() {  # sets children_seconds: user+system CPU of this shell's finished children (`times`, 2nd line)
    times > "$work/times"
    children_seconds="$(tail -1 "$work/times" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] }; printf "%.2f", n }')"
}

# After the sender finished: the receiver's figure and packet count, and the CPU the emulator and the receiver used.
finish_measurement() {  # stack run name sender_rate sender_cpu
    wait_for "$work/$3.receiver" "Received last packet"
    local receiver packets unexpected controllers_cpu receiver_cpu
    receiver="$(plain "$work/$3.receiver" | grep -E 'Speed: instant=' | tail -1 | sed -nE 's/.*average=([0-9]+).*/\1/p')"
    packets="$(grep -c '<<< Received packet' "$work/$3.receiver" || true)"
    unexpected="$(grep -c 'Unexpected packet' "$work/$3.receiver" || true)"
    controllers_cpu="$(cpu_of "$controllers_pid")"
    receiver_cpu="$(cpu_of "$receiver_pid")"
    stop_started
    if [[ "$packets" != "$count" || "$unexpected" != 0 || -z "$4" ]]; then
        echo "$1 run $2: the receiver got $packets of $count packets ($unexpected out of order)" >&2; exit 1
    fi
    echo "{\"benchmark\":\"ble_l2cap_send\",\"stack\":\"$1\",\"run\":$2,\"receiver_bytes_per_second\":$receiver,\"sender_bytes_per_second\":$4,\"packets\":$packets,\"cpu_seconds\":{\"sender\":$5,\"controllers\":$controllers_cpu,\"receiver\":$receiver_cpu}}"
}

start_receiver() {  # name
    .venv/bin/bumble-bench --mode l2cap-server --scenario receive --linger --l2cap-psm 129 peripheral \
        "tcp-client:127.0.0.1:$port_a" > "$work/$1.receiver" 2>&1 &
    receiver_pid=$!
    pids+=($!)
    wait_for "$work/$1.receiver" "Waiting for connection"
}

measure_ours() {  # run
    local name="ours$1" line cpu0 cpu1
    start_controllers "$name"
    start_receiver "$name"
    children_cpu; cpu0="$children_seconds"
    line="$(timeout 300 "$bench" ble-l2cap-send --hci "tcp:127.0.0.1:$port_b" --psm 129 --packet-size 1024 \
        --count "$count" --json)"
    children_cpu; cpu1="$children_seconds"
    finish_measurement ours "$1" "$name" "$(echo "$line" | grep -oE '"bytes_per_second":[0-9]+' | cut -d: -f2)" \
        "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')"
}

measure_bumble() {  # run
    local name="bumble$1" cpu0 cpu1
    start_controllers "$name"
    start_receiver "$name"
    children_cpu; cpu0="$children_seconds"
    timeout 300 .venv/bin/bumble-bench --mode l2cap-client --scenario send --l2cap-psm 129 -s 1024 -c "$count" \
        central --peripheral F1:F1:F1:F1:F1:F1 "tcp-client:127.0.0.1:$port_b" > "$work/$name.sender" 2>&1 || true
    children_cpu; cpu1="$children_seconds"
    # The sender prints "Received ACK. Speed: average=<bytes/s> (<n> bytes in <t> seconds)".
    finish_measurement bumble "$1" "$name" \
        "$(plain "$work/$name.sender" | grep -E 'Received ACK. Speed: average=' | tail -1 | sed -nE 's/.*average=([0-9]+).*/\1/p')" \
        "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')"
}

for run in $(seq "$runs"); do
    if (( run % 2 == 1 )); then order=(measure_ours measure_bumble); else order=(measure_bumble measure_ours); fi
    for measure in "${order[@]}"; do
        "$measure" "$run" > "$work/line"
        cat "$work/line" | tee -a "$work/lines"
    done
done

python3 - "$work/lines" <<'PY'
import json, statistics, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
def median(stack, value):
    values = [value(l) for l in lines if l["stack"] == stack]
    return statistics.median(v for v in values if v is not None) if any(v is not None for v in values) else None
for end in ("receiver", "sender"):
    ours = median("ours", lambda l: l[f"{end}_bytes_per_second"])
    bumble = median("bumble", lambda l: l[f"{end}_bytes_per_second"])
    print(json.dumps({"benchmark": "ble_l2cap_ratio", "end": end, "runs": len(lines) // 2,
                      "ours_median_bytes_per_second": int(ours), "bumble_bench_median_bytes_per_second": int(bumble),
                      "ratio": round(ours / bumble, 2)}))  # noqa
print(json.dumps({"benchmark": "ble_l2cap_cpu_seconds_median", **{
    stack: {part: median(stack, lambda l: l["cpu_seconds"][part]) for part in ("sender", "controllers", "receiver")}
    for stack in ("ours", "bumble")}}))
PY

if (( echo_too )); then
    # Our host against the Bumble echo peer (MTU 2048, MPS 1024, 64 credits on the Bumble side), per direction.
    start_controllers echo
    "$python" Tests/BLE/peer.py echo "$port_a" C0:00:00:00:00:0A 129 2048 1024 64 > "$work/echo.log" 2>&1 &
    pids+=($!)
    wait_for "$work/echo.log" READY
    timeout 300 "$bench" ble-l2cap --hci "tcp:127.0.0.1:$port_b" --peer C0:00:00:00:00:0A --psm 129 \
        --bytes "$bytes" --sdu 1000 --json
    stop_started
fi
