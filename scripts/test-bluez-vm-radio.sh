# Sourced by scripts/test-bluez-vm.sh (on the host and in the guest): tests m and n.
#   (m) beacons through BlueZ scanning: `nearby beacons --hci bluez` (BLEBeaconScanner on BlueZGAP: Device1
#       ServiceData and ManufacturerData rebuilt into AD structures) in the guest reports the Eddystone-UID
#       (service data 0xFEAA) and the iBeacon (manufacturer data, Apple 0x004C, 02 15 ...) that two Bumble
#       advertisers on the host send;
#   (n) rfkill: while nearby-bluez-probe advertises, the guest soft-blocks the adapter's rfkill switch and unblocks
#       it again (/sys/class/rfkill/rfkillN/soft: the host has no rfkill tool and shares its root filesystem; the
#       switch is the one `rfkill block bluetooth` sets through /dev/rfkill). The probe reports the adapter powered
#       off, then powered again; the host's Bumble scanner sees the advertisement after the unblock.
# Uses the caller's now/since/report (guest) and work/pids/python/rc/wait_for/bluez_vm_await_flag (host).
# shellcheck shell=bash

m_eddystone_address=C0:00:00:00:00:ED
m_ibeacon_address=C0:00:00:00:00:1B
# Flags, Complete 16-bit UUIDs 0xFEAA, service data 0xFEAA: UID frame (0x00), TX power -25, namespace, instance.
m_eddystone_ad=0201060303aafe1516aafe00e7a1a2a3a4a5a6a7a8a9aab1b2b3b4b5b6
# Flags, manufacturer data: Apple (4c 00), iBeacon (02 15), proximity UUID, major 7, minor 9, power -59.
m_ibeacon_ad=0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00070009c5
n_adv_data=5a5a0003

# In the guest.
bluez_radio_guest_tests() {
    local started ok out=/tmp/m-beacons.out pid i
    # (m) beacons through BlueZ
    started="$(now)"
    ok=0
    timeout 60 "${NEARBY_BIN:-.build/debug/nearby}" beacons --hci bluez --json --timeout 50 >"$out" 2>/tmp/m-beacons.log &
    pid=$!
    for ((i = 0; i < 450; i++)); do
        grep -q '"kind":"eddystone-uid"' "$out" 2>/dev/null && grep -q '"kind":"ibeacon"' "$out" && { ok=1; break; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    report "m: nearby beacons --hci bluez sees an Eddystone-UID (0xFEAA) and an iBeacon (Apple manufacturer data)" \
        "$ok" "$started" "[$(grep -o '"kind":"[a-z-]*"' "$out" | sort -u | tr '\n' ' ')]"
    ((ok)) || cat "$out" /tmp/m-beacons.log >&2

    # (n) rfkill block/unblock under a running BlueZ-backed process
    started="$(now)"
    ok=0
    local probe="${NEARBY_BLUEZ_PROBE:-.build/debug/nearby-bluez-probe}" log=/tmp/n-probe.log switch="" steps=""
    for i in /sys/class/rfkill/rfkill*; do
        [[ "$(cat "$i/type" 2>/dev/null)" == bluetooth ]] && { switch="$i"; break; }
    done
    bluez_vm_drop_le_links
    "$probe" advertise --service-data "$n_adv_data" >"$log" 2>&1 &
    pid=$!
    n_wait() { # n_wait PATTERN SECONDS
        for ((i = 0; i < $2 * 10; i++)); do
            grep -q "$1" "$log" 2>/dev/null && return 0
            sleep 0.1
        done
        return 1
    }
    if [[ -n "$switch" ]] && n_wait '^REGISTERED 1 ' 60; then
        steps="registered;"
        echo 1 >"$switch/soft"
        if n_wait '^POWERED false' 20; then
            steps+=" blocked: powered off;"
            touch "$NEARBY_BLUEZ_VM_OUT/n-blocked"
            echo 0 >"$switch/soft"
            if n_wait '^POWERED true' 20; then
                steps+=" unblocked: powered on;"
                touch "$NEARBY_BLUEZ_VM_OUT/n-unblocked"
                ok=1
                # On air until the host's scanner has seen it again (the host writes n-seen; it checks after the
                # guest), at most 30 s: a fixed pause was too short for a loaded host once.
                n_seen=0
                for ((i = 0; i < 300; i++)); do
                    [[ -e "$NEARBY_BLUEZ_VM_OUT/n-seen" ]] && n_seen=1 && break
                    sleep 0.1
                done
                steps+=" host scanner saw it again: $n_seen;"
                steps+=" $(script -qc 'btmgmt advinfo' /dev/null | tr -d '\r' | grep -iE 'instances' | tr '\n' ' ');"
            fi
        fi
    fi
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    report "n: rfkill block/unblock: the BlueZ-backed probe sees the adapter powered off and on (${switch:-no rfkill switch})" \
        "$ok" "$started" "[$steps $(grep -E '^(POWERED|REGISTERED|UNREGISTERED|FAILED)' "$log" | tr '\n' ';')]"
    ((ok)) || cat "$log" >&2
}

# On the host: whether the Bumble scanner's log has the probe's advertisement after line $1. awk reads the whole file:
# `tail | grep -q` under pipefail fails when grep stops early and tail dies of SIGPIPE (a CI run hit that).
n_seen_after() {
    awk -v offset="$1" -v data="$n_adv_data" \
        'NR > offset && $1 == "FEF3" && $NF == data { seen = 1 } END { exit !seen }' "$work/dbus-scan.out"
}

# On the host: the two beacons (controllers $1 and $2), and a watcher that notes how far the Bumble scanner of
# e-g ($work/dbus-scan.out) had got when the guest unblocked rfkill (n).
start_bluez_radio_peers() {
    "$python" Tests/BLE/peer.py advertise "$1" "$m_eddystone_address" "$m_eddystone_ad" >"$work/m-eddystone.out" 2>&1 &
    pids+=($!)
    wait_for "$work/m-eddystone.out" '^READY' "${pids[-1]}" 20
    "$python" Tests/BLE/peer.py advertise "$2" "$m_ibeacon_address" "$m_ibeacon_ad" >"$work/m-ibeacon.out" 2>&1 &
    pids+=($!)
    wait_for "$work/m-ibeacon.out" '^READY' "${pids[-1]}" 20
    (
        run="$(bluez_vm_await_flag n-unblocked 6000)" || exit 0
        offset="$(wc -l <"$work/dbus-scan.out")"
        echo "$offset" >"$work/n-offset"
        # Tell the guest once the scanner has seen the advertisement again, so it stops advertising then.
        for ((j = 0; j < 300; j++)); do
            if n_seen_after "$offset"; then
                touch "$run/n-seen"
                break
            fi
            sleep 0.1
        done
    ) &
    pids+=($!)
}

# On the host, after the guest: the scanner saw the probe's advertisement again after the unblock. Sets rc.
check_bluez_radio_on_host() {
    local offset
    offset="$(cat "$work/n-offset" 2>/dev/null || true)"
    if [[ -n "$offset" ]] && n_seen_after "$offset"; then
        echo "ok   n (host side): the Bumble scanner saw 0xFEF3 $n_adv_data again after the rfkill unblock" >&2
    else
        echo "FAIL n (host side): no 0xFEF3 $n_adv_data after the rfkill unblock (offset ${offset:-none};" \
            "$(grep -c "^FEF3 .* $n_adv_data\$" "$work/dbus-scan.out") sightings in all)" >&2
        ((rc != 0)) || rc=1
    fi
}
