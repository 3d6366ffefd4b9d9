#!/usr/bin/env bash
# Usage: scripts/with-test-network.sh CMD [ARGS...]
#
# Runs CMD inside a private network namespace whose interfaces are lo (multicast enabled, 224.0.0.0/4
# routed to lo) and a veth pair joined to itself (10.77.0.1/24 and 10.77.0.2/24; no traffic leaves), with a
# private /run, a private D-Bus system bus and a private avahi-daemon bound to lo.
# Nothing is sent on any host interface and nothing is left behind: on exit avahi and dbus are killed by PID
# and the temporary directory is removed. Exits with CMD's exit code. Needs root (unshare -n, mount).
#
# Inside, CMD sees:
#   NEARBY_TEST_NETNS=1              this environment is up (a nested call just runs CMD)
#   NEARBY_TEST_LAN_ADDRESS          10.77.0.1, a non-loopback address of this namespace (unset without veth)
#   DBUS_SYSTEM_BUS_ADDRESS          the private bus, where libavahi-client and avahi-* tools find avahi
#   NEARBY_TEST_AVAHI_PID            PID of the avahi-daemon started here
#   NEARBY_TEST_AVAHI_CONF           its config; to restart avahi after stopping it, run
#                                      avahi-daemon --no-drop-root --no-chroot --no-rlimits -f "$NEARBY_TEST_AVAHI_CONF" &
#                                    (a daemon restarted that way is also killed on exit, through its pid file)
#   NEARBY_TEST_AVAHI_LOG            avahi's log (stderr of the daemon started here)
#   NEARBY_TEST_DBUS_CONF            the private dbus-daemon config
#   NEARBY_TEST_DBUS_PID             PID of the private dbus-daemon
#   NEARBY_TEST_ENV_DIR              the temporary directory holding all of the above
set -euo pipefail

if (($# == 0)); then
    echo "usage: $0 CMD [ARGS...]" >&2
    exit 2
fi

# Already inside a test network (nested call): just run the command.
if [[ "${NEARBY_TEST_NETNS:-}" == 1 ]]; then
    exec "$@"
fi

log() { printf 'with-test-network: %s\n' "$*" >&2; }

# Outside: re-execute this script in new network and mount namespaces. Private propagation keeps the
# tmpfs mounted over /run below from reaching the host's mount table.
if [[ "${_NEARBY_TEST_NETNS_STAGE:-}" != inner ]]; then
    if ((EUID != 0)); then
        log "needs root (unshare --net, mount)"
        exit 1
    fi
    self="$(readlink -f "${BASH_SOURCE[0]}")"
    export _NEARBY_TEST_NETNS_STAGE=inner
    exec unshare --net --mount --propagation private -- bash "$self" "$@"
fi
unset _NEARBY_TEST_NETNS_STAGE

# --- inside the new namespaces ----------------------------------------------------------------------------

ip link set lo up
ip link set lo multicast on
ip route add 224.0.0.0/4 dev lo 2>/dev/null || true

# A veth pair that never leaves this namespace, so the host has LAN-like addresses (10.77.0.1 and 10.77.0.2)
# besides loopback: bandwidth upgrades offer only addresses peers accept, never loopback. Avahi stays on lo.
if ip link add nearby-lan0 type veth peer name nearby-lan1 2>/dev/null; then
    ip addr add 10.77.0.1/24 dev nearby-lan0
    ip addr add 10.77.0.2/24 dev nearby-lan1
    ip link set nearby-lan0 up
    ip link set nearby-lan1 up
    export NEARBY_TEST_LAN_ADDRESS=10.77.0.1
else
    log "no veth support: only loopback, so bandwidth upgrade tests cannot run"
fi

# A private /run: avahi's pid file and socket and anything else a test writes there stay in this namespace.
# -n: no utab update, which would otherwise create /run/mount on the host /run before the tmpfs covers it.
mount -n -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mkdir -p /run/avahi-daemon /run/dbus

env_dir="$(mktemp -d "${TMPDIR:-/tmp}/nearby-test-network.XXXXXX")"
dbus_conf="$env_dir/dbus-system.conf"
avahi_conf="$env_dir/avahi-daemon.conf"
avahi_log="$env_dir/avahi.log"
bus_socket="$env_dir/bus.sock"
dbus_pid=""
avahi_pid=""

# Both functions run from the EXIT trap, which shellcheck cannot see.
# shellcheck disable=SC2317
kill_and_reap() {
    local pid="$1"
    [[ -n "$pid" ]] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# Every process still in this network namespace after CMD returned was started by CMD (a helper a test left
# behind, e.g. an orphaned avahi-publish); end each by PID. SIGTERM first, then SIGKILL after 2 s for any that
# block or ignore SIGTERM (seen once: an orphaned avahi-publish spawned from a test had SIGTERM blocked).
# shellcheck disable=SC2317
kill_namespace_leftovers() {
    local own_ns dir pid i
    local -a pids=() alive=()
    own_ns="$(readlink /proc/$$/ns/net)"
    for dir in /proc/[0-9]*; do
        pid="${dir#/proc/}"
        [[ "$pid" != "$$" ]] || continue
        [[ "$(readlink "$dir/ns/net" 2>/dev/null)" == "$own_ns" ]] || continue
        pids+=("$pid")
    done
    ((${#pids[@]} > 0)) || return 0
    log "ending processes left in the test namespace: ${pids[*]}"
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for ((i = 0; i < 20; i++)); do
        alive=()
        for pid in "${pids[@]}"; do
            if kill -0 "$pid" 2>/dev/null; then
                alive+=("$pid")
            fi
        done
        ((${#alive[@]} > 0)) || return 0
        sleep 0.1
    done
    for pid in "${alive[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
}

# shellcheck disable=SC2317
cleanup() {
    local restarted=""
    # A test may have stopped our avahi and started another one; the pid file in the private /run names it.
    if [[ -r /run/avahi-daemon/pid ]]; then
        restarted="$(tr -dc '0-9' </run/avahi-daemon/pid)"
    fi
    kill_and_reap "$avahi_pid"
    if [[ -n "$restarted" && "$restarted" != "$avahi_pid" ]] &&
        [[ "$(cat "/proc/$restarted/comm" 2>/dev/null)" == avahi-daemon ]]; then
        kill_and_reap "$restarted"
    fi
    kill_and_reap "$dbus_pid"
    kill_namespace_leftovers
    rm -rf "$env_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat >"$dbus_conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF

cat >"$avahi_conf" <<'EOF'
[server]
host-name=nearby-test
use-ipv4=yes
use-ipv6=no
allow-interfaces=lo
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
EOF

export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$bus_socket"
export NEARBY_TEST_NETNS=1
export NEARBY_TEST_ENV_DIR="$env_dir"
export NEARBY_TEST_DBUS_CONF="$dbus_conf"
export NEARBY_TEST_AVAHI_CONF="$avahi_conf"
export NEARBY_TEST_AVAHI_LOG="$avahi_log"

dbus-daemon --config-file="$dbus_conf" --nofork --nopidfile >"$env_dir/dbus.log" 2>&1 </dev/null &
dbus_pid=$!
export NEARBY_TEST_DBUS_PID="$dbus_pid"

for ((i = 0; i < 100; i++)); do
    [[ -S "$bus_socket" ]] && break
    if ! kill -0 "$dbus_pid" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if [[ ! -S "$bus_socket" ]]; then
    log "dbus-daemon did not start:"
    cat "$env_dir/dbus.log" >&2
    exit 1
fi

: >"$avahi_log" # exists before the readiness poll reads it
avahi-daemon --no-drop-root --no-chroot --no-rlimits -f "$avahi_conf" >>"$avahi_log" 2>&1 </dev/null &
avahi_pid=$!
export NEARBY_TEST_AVAHI_PID="$avahi_pid"

ready=0
for ((i = 0; i < 100; i++)); do
    if grep -qs 'Server startup complete' "$avahi_log"; then
        ready=1
        break
    fi
    if ! kill -0 "$avahi_pid" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if ((ready == 0)); then
    log "avahi-daemon did not start (exited, or no \"Server startup complete\" within 10 s):"
    cat "$avahi_log" >&2
    exit 1
fi

# Run CMD in the foreground (it keeps the terminal and stdin); the EXIT trap tears everything down.
set +e
"$@"
rc=$?
set -e
exit "$rc"
