#!/usr/bin/env bash
# Usage: scripts/soak.sh [COUNT]          (default 50; as root on Debian 12, installs what it needs)
#
# Fault soak (docs/HARDENING.md, "Fault soak"): COUNT file transfers between `nearby send` and a long-lived
# `nearby advertise`, each with a random fault (SIGKILL of either side, SIGSTOP past the keep-alive timeout,
# cancel from either side via SIGUSR1, the veth link taken down, the receiver's tmpfs filled up mid-transfer, or none), checked
# after each transfer: no corrupt or partial file under a final name, the surviving side reports the failure,
# the long-lived advertiser's fd count and RSS stay flat. Exits non-zero on any violation; the last lines are a
# summary with counts per fault kind and the advertiser's fd/RSS figures.
#
# Topology, inside scripts/with-test-network.sh: the advertisers stay in the test namespace (10.77.0.1 on
# nearby-lan0); nearby-lan1 (10.77.0.2) is moved into a second namespace where every sender runs and connects to
# 10.77.0.1, so all transfer traffic crosses the veth pair and `ip link set nearby-lan0 down` really cuts it.
# Receive directories are small tmpfs mounts (disk-full faults fill them).
#
# Environment: SOAK_SEED (replay a run's fault sequence and sizes), SOAK_BUILD=debug|release (default debug: the build the test suite already made),
# SOAK_NEARBY=/path/to/nearby (skip the build), SOAK_STRICT_STALE=0 (count, but do not fail on, .partial files
# that survive an advertiser restart after a SIGKILL), SOAK_KEEP=1 (keep the work directory and logs).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
count="${1:-50}"
if ! [[ "$count" =~ ^[0-9]+$ ]] || ((count < 1)); then
    echo "usage: $0 [COUNT]" >&2
    exit 2
fi

if [[ "${NEARBY_TEST_NETNS:-}" != 1 ]]; then
    scripts/install-deps.sh
    if [[ -z "${SOAK_NEARBY:-}" ]]; then
        configuration="${SOAK_BUILD:-debug}"
        swift build -c "$configuration" --product nearby >&2
        SOAK_NEARBY="$(swift build -c "$configuration" --show-bin-path)/nearby"
        export SOAK_NEARBY
    fi
    exec scripts/with-test-network.sh "$repo_root/scripts/soak.sh" "$@"
fi

# --- inside the test network -----------------------------------------------------------------------------------
nearby="${SOAK_NEARBY:-$(swift build -c "${SOAK_BUILD:-debug}" --show-bin-path)/nearby}"
[[ -x "$nearby" ]] || { echo "soak: no nearby binary at $nearby" >&2; exit 1; }
peer_netns=nearby-soak-peer
work="$(mktemp -d "${TMPDIR:-/tmp}/nearby-soak.XXXXXX")"

# Ends every process left in the peer namespace (a sender the driver could not reap), by PID.
kill_peer_processes() {
    local peer_ns dir pid
    peer_ns="$(stat -L -c %i "/run/netns/$peer_netns" 2>/dev/null)" || return 0
    for dir in /proc/[0-9]*; do
        pid="${dir#/proc/}"
        [[ "$(stat -L -c %i "$dir/ns/net" 2>/dev/null)" == "$peer_ns" ]] || continue
        kill -CONT "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    done
}
cleanup() {
    kill_peer_processes
    ip link set nearby-lan0 up 2>/dev/null || true
    umount "$work/inbox-main" "$work/inbox-victim" 2>/dev/null || true
    ip netns del "$peer_netns" 2>/dev/null || true
    if [[ "${SOAK_KEEP:-0}" == 1 ]]; then
        echo "soak: work directory kept: $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

ip link show nearby-lan1 >/dev/null 2>&1 || { echo "soak: the test network has no veth pair" >&2; exit 1; }
ip netns add "$peer_netns"
ip link set nearby-lan1 netns "$peer_netns"
ip -n "$peer_netns" link set lo up
ip -n "$peer_netns" addr add 10.77.0.2/24 dev nearby-lan1
ip -n "$peer_netns" link set nearby-lan1 up
for _ in $(seq 1 50); do
    ip -n "$peer_netns" link show nearby-lan1 | grep -q LOWER_UP && ip link show nearby-lan0 | grep -q LOWER_UP && break
    sleep 0.1
done

mkdir -p "$work/inbox-main" "$work/inbox-victim"
mount -n -t tmpfs -o size=128m,mode=0700 tmpfs "$work/inbox-main"
mount -n -t tmpfs -o size=128m,mode=0700 tmpfs "$work/inbox-victim"

python3 "$repo_root/scripts/soak.py" "$count" "$nearby" "$work" "$peer_netns" nearby-lan0
