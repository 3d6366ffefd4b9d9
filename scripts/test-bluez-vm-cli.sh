# Sourced by scripts/test-bluez-vm.sh (on the host and in the guest): test o, `nearby advertise` and
# `nearby discover` with `--hci bluez` typed as a user would (issue 21 item 7): no --receive-dir (the receive
# directory is the current one: a folder of 10,000 entries in the guest's tmpfs), no --no-upgrade (Wi-Fi LAN joins as
# the upgrade target), --verbose.
#   - the advertiser must say discoverable within 60 s, and the host's Bumble scanner (the one of e-g) must see its
#     0xFEF3 service data. Before the fix its engine swept the whole receive directory for stale partial files
#     before anything else: 2-4 minutes in this guest, in silence;
#   - the discoverer must report a Bumble advertiser's fast Nearby advertisement (host controller 11, started when
#     the guest writes o-ready, so that earlier tests do not see it).
# Uses the caller's now/since/report (guest) and work/pids/python/rc/bluez_vm_await_flag (host).
# shellcheck shell=bash

o_service=com.example.bluez.o
o_name=vmrigo
o_name_hex=766d7269676f
o_beacon_address=C0:00:00:00:00:0F
# Flags, Complete 16-bit UUIDs 0xFEF3, service data 0xFEF3: a fast Nearby advertisement (BleMediumAdvertisement
# 0x4a: version 2, socket version 2, fast; 13 bytes of BleConnectionsAdvertisement: 0x23 version 1 + PCP 3
# point-to-point, endpoint ID BMBL, 7 bytes of endpoint info "bumbleo"), then a 2-byte device token.
o_beacon_info_hex=62756d626c656f
o_beacon_ad=0201060303f3fe1416f3fe4a0d23424d424c07${o_beacon_info_hex}abcd

# In the guest.
bluez_cli_guest_tests() {
    local started ok=0 out=/tmp/o-advertise.out log=/tmp/o-advertise.log pid i seen=0
    local nearby="${NEARBY_BIN:-.build/debug/nearby}"
    # The receive directory is the current one: a writable folder with 10,000 entries (the guest's root, the
    # repository, is read-only here, and the CLI refuses an unwritable receive directory at start).
    local home=/tmp/o-home
    mkdir -p "$home"
    (cd "$home" && seq -w 1 100 | xargs mkdir -p && for d in $(seq -w 1 100); do (cd "$d" && seq 1 99 | xargs touch); done)
    [[ "$nearby" == /* ]] || nearby="$PWD/$nearby"
    bluez_vm_drop_le_links
    started="$(now)"
    (cd "$home" && exec timeout 150 "$nearby" advertise --service-id "$o_service" --name "$o_name" --medium ble \
        --hci bluez --accept --json --verbose) >"$out" 2>"$log" &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        grep -q '"discoverable":true' "$out" 2>/dev/null && { ok=1; break; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    local advertised_after="never (it exited)"
    ((ok)) && advertised_after="$(since "$started") s"
    if ((ok)); then
        # On air until the host's scanner has seen it (the host writes o-seen), at most 30 s.
        touch "$NEARBY_BLUEZ_VM_OUT/o-advertising"
        for ((i = 0; i < 300; i++)); do
            [[ -e "$NEARBY_BLUEZ_VM_OUT/o-seen" ]] && { seen=1; break; }
            sleep 0.1
        done
    fi
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    report "o: nearby advertise --hci bluez (no --receive-dir, upgrade on) is discoverable within 60 s" "$ok" "$started" \
        "[discoverable after $advertised_after; host scanner saw it: $seen]"
    ((ok)) || cat "$out" "$log" >&2

    # The discoverer: the Bumble advertiser starts on the host once o-ready is there.
    started="$(now)"
    ok=0
    out=/tmp/o-discover.out
    log=/tmp/o-discover.log
    touch "$NEARBY_BLUEZ_VM_OUT/o-ready"
    timeout 100 "$nearby" discover --service-id "$o_service" --medium ble --hci bluez --json --verbose --timeout 90 \
        >"$out" 2>"$log" &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        grep '"endpoint_found"' "$out" 2>/dev/null | grep -q "\"endpoint_info_hex\":\"$o_beacon_info_hex\"" && { ok=1; break; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    report "o: nearby discover --hci bluez reports a Bumble advertiser's fast Nearby advertisement" "$ok" "$started" \
        "[$(grep -m1 '"endpoint_found"' "$out")]"
    ((ok)) || cat "$out" "$log" >&2
}

# On the host: the Bumble fast advertiser on controller $1, started when the guest writes o-ready (it advertises for
# 120 s), and a watcher that writes o-seen once the scanner of e-g saw the guest's advertiser (after o-advertising).
start_bluez_cli_peers() {
    (
        bluez_vm_await_flag o-ready 6000 >/dev/null || exit 0
        exec "$python" Tests/BLE/peer.py advertise "$1" "$o_beacon_address" "$o_beacon_ad" 120
    ) >"$work/o-beacon.out" 2>&1 &
    pids+=($!)
    (
        run="$(bluez_vm_await_flag o-advertising 6000)" || exit 0
        for ((j = 0; j < 300; j++)); do
            if grep -q "^FEF3 F0:F1:F2:F3:F4:00 .*$o_name_hex" "$work/dbus-scan.out"; then
                touch "$run/o-seen"
                break
            fi
            sleep 0.1
        done
    ) &
    pids+=($!)
}

# On the host, after the guest: the Bumble scanner saw the guest's advertiser (o). Sets rc on failure.
check_bluez_cli_on_host() {
    if grep -q "^FEF3 F0:F1:F2:F3:F4:00 .*$o_name_hex" "$work/dbus-scan.out"; then
        echo "ok   o (host): the Bumble scanner saw nearby advertise --hci bluez" \
            "[$(grep -m1 "^FEF3 F0:F1:F2:F3:F4:00 .*$o_name_hex" "$work/dbus-scan.out")]" >&2
    else
        echo "FAIL o (host): the Bumble scanner never saw the 0xFEF3 service data of nearby advertise --hci bluez" >&2
        ((rc != 0)) || rc=1
    fi
}
