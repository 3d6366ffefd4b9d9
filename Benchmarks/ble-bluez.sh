#!/usr/bin/env bash
# L2CAP LE CoC throughput through the Linux kernel (BlueZ's sockets, in the QEMU guest of scripts/with-bluez-vm.sh)
# against our user-space host, next to our user-space host against itself, on the same linked Bumble virtual
# controllers in the same run.
#
#   Benchmarks/ble-bluez.sh [BYTES] [SDU]      (default 200000 bytes in 2000-byte SDUs)
#
# One controllers.py with four linked controllers: A and D serve (`nearby-l2cap-probe serve`, our user-space host,
# dynamic PSM, echoes every SDU), B is our user-space host as client of A (`nearby-l2cap-probe send tcp:B`), C is
# the guest's hci0, client of D (`nearby-l2cap-probe send bluez` inside scripts/with-bluez-vm.sh: the kernel's
# L2CAP socket). One server per client: with one server for both, the guest's connect after the user-space
# client's channel failed with ECONNREFUSED (not investigated; the server probably no longer advertises after its
# first connection, and the virtual link refuses an LE connection to a device that does not).
# Both clients send BYTES and read the echo at once; the rate is bytes per second per direction over the echo
# (connect time excluded). Prints three JSON lines: each path, then the ratio kernel / user-space.
#
# Emulator-bound: the guest is TCG (no KVM), its controller's H4 byte stream goes through QEMU (a virtio console by
# default, NEARBY_BLUEZ_VM_WIRE=uart for the 16550 UART), and Bumble's controllers have 27-byte LE ACL buffers.
# Not a hardware figure. Needs root (QEMU), scripts/install-deps.sh, the kernel (scripts/with-bluez-vm.sh --prepare)
# and .build/debug/nearby-l2cap-probe (NEARBY_PROBE_BIN overrides). Only processes started here are ended, by PID;
# all TCP stays on 127.0.0.1 and the guest has no network device.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
bytes="${1:-200000}"
sdu="${2:-2000}"
python="${NEARBY_BLE_PYTHON:-.venv/bin/python}"
probe="${NEARBY_PROBE_BIN:-.build/debug/nearby-l2cap-probe}"
wire="${NEARBY_BLUEZ_VM_WIRE:-virtio}"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

wait_for() { # file pattern
    for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    echo "ble-bluez: timed out waiting for $2 in $1" >&2; cat "$1" >&2; exit 1
}
# "ok ... connect 0.5 seconds, echo 1.25 seconds" -> bytes per second per direction
rate() { sed -nE 's/.*echo ([0-9.e+-]+) seconds.*/\1/p' <<<"$1" | awk -v b="$bytes" '{ printf "%d", b / $1 }'; }
json() { # path line
    printf '{"benchmark":"ble_bluez_l2cap","path":"%s","wire":"%s","bytes":%d,"sdu":%d,"bytes_per_second_per_direction":%s}\n' \
        "$1" "$wire" "$bytes" "$sdu" "$(rate "$2")"
}

"$python" Tests/BLE/controllers.py 4 --enhanced-connection-complete >"$work/controllers.out" 2>"$work/controllers.log" &
pids+=($!)
wait_for "$work/controllers.out" '^READY'
read -r _ port_a port_b port_c port_d <"$work/controllers.out"

for server in a d; do
    port_var="port_$server"
    "$probe" serve "tcp:127.0.0.1:${!port_var}" dynamic 1 >"$work/serve-$server.out" 2>&1 &
    pids+=($!)
    wait_for "$work/serve-$server.out" '^READY'
done
read -r _ address psm <"$work/serve-a.out"
read -r _ kernel_address kernel_psm <"$work/serve-d.out"

user="$("$probe" send "tcp:127.0.0.1:$port_b" "$address" "$psm" "$bytes" "$sdu" | grep '^ok ')"
json "user-space host <-> user-space host" "$user"

kernel="$(NEARBY_BLUEZ_VM_HCI_PORT="$port_c" NEARBY_BLUEZ_VM_WIRE="$wire" NEARBY_BLUEZ_VM_TIMEOUT=120 \
    scripts/with-bluez-vm.sh "$probe" send bluez "$kernel_address" "$kernel_psm" "$bytes" "$sdu" | grep '^ok ')"
json "guest kernel socket (BlueZ) <-> user-space host" "$kernel"

awk -v k="$(rate "$kernel")" -v u="$(rate "$user")" \
    'BEGIN { printf "{\"benchmark\":\"ble_bluez_l2cap_ratio\",\"kernel_over_user_space\":%.3f}\n", k / u }'
