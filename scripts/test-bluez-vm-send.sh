# Sourced by scripts/test-bluez-vm.sh (on the host and in the guest): tests k and l, a BlueZ-backed `nearby send`
# (--hci bluez: BlueZGAP discovery through Adapter1/Device1, a kernel L2CAP client) in the guest to our user-space
# host's `nearby advertise --hci tcp:...` on the host.
#   (k) bytes + a file over BLE only (--no-upgrade): the host's advertiser uses the fast form, which has no PSM, so
#       the guest's BlueZ-backed sender opens a Weave GATT socket through BlueZ's GATT client (Device1,
#       GattCharacteristic1), as it would to a phone; the host checks that it was a Weave socket and no L2CAP
#       channel; the guest checks both were sent, the host that the file
#       arrived with the same SHA-256. 1 MiB by default (about 65 s at ~16 KiB/s through the TCG guest);
#       NEARBY_BLUEZ_VM_K_BYTES sets another size;
#   (l) the same with the bandwidth upgrade: the host's advertiser offers its Wi-Fi LAN listener (the test
#       namespace's veth addresses 10.77.0.x); the guest, on QEMU user networking (NEARBY_BLUEZ_VM_NET=user),
#       reaches them through QEMU's NAT (slirp connects from the host's namespace), so the connection moves to
#       Wi-Fi LAN. No mDNS is involved: the upgrade frame carries the address and port. Runs when the guest has
#       eth0 (NEARBY_BLUEZ_VM_UPGRADE=0 skips it).
# Uses the caller's now/since/report (guest) and work/pids/nearby/rc/bluez_vm_await_flag (host).
# shellcheck shell=bash

k_service=com.example.bluez.k
k_bytes="hello from the guest's BlueZ"

# In the guest: drop the LE links earlier tests left (the virtual controller neither advertises next to a
# connection nor does the kernel start a second connection to a peer it is still linked to).
bluez_vm_drop_le_links() {
    local links address kind type i
    for ((i = 0; i < 50; i++)); do
        links="$(script -qc 'btmgmt con' /dev/null | tr -d '\r' | grep -iE 'type (LE|le)' || true)"
        [[ -n "$links" ]] || return 0
        while read -r address _ _ kind _; do
            [[ "${kind,,}" == random ]] && type=2 || type=1
            btmgmt disconnect -t "$type" "$address" >/dev/null 2>&1 || true
        done <<<"$links"
        sleep 0.2
    done
}

# bluez_send_guest_run NAME EXTRA-ARGS...: `nearby send` of bytes + /tmp/k.bin to the host's advertiser; sets
# send_ok, send_seconds (of the last attempt) and send_attempt. A second attempt is made only when the first one's
# connection ended before both sides accepted (the guest's one emulated CPU, on a host under load, missed the
# advertiser's connection-request deadline when it was 2 s on BLE too; it is 10 s there now); its output is printed. A
# failure once connected is never retried.
bluez_send_guest_run() {
    local name="$1" started
    shift
    for send_attempt in 1 2; do
        bluez_vm_drop_le_links
        started="$(now)"
        send_ok=0
        timeout 240 "${NEARBY_BIN:-.build/debug/nearby}" send --service-id "$k_service" --to-name hostk --name "vm$name" \
            --accept --json --bytes "$k_bytes" --file /tmp/k.bin --medium ble --hci bluez --timeout 60 ${NEARBY_BLUEZ_VM_SEND_VERBOSE:+--verbose} "$@" \
            >"/tmp/$name-send.out" 2>"/tmp/$name-send.log" </dev/null &&
            [[ "$(grep -c '"payload_sent"' "/tmp/$name-send.out")" == 2 ]] &&
            grep '"payload_sent"' "/tmp/$name-send.out" | grep -q "\"sha256\":\"$k_sha256\"" && send_ok=1
        send_seconds="$(since "$started")"
        ((send_ok)) && return 0
        grep -q "closed before it was accepted" "/tmp/$name-send.log" || return 0
        echo "note $name: attempt $send_attempt's connection closed before it was accepted:" >&2
        cat "/tmp/$name-send.out" "/tmp/$name-send.log" >&2
    done
}

# In the guest, after j.
bluez_send_guest_tests() {
    local started rate
    head -c "${NEARBY_BLUEZ_VM_K_BYTES:-1048576}" /dev/urandom >/tmp/k.bin
    k_sha256="$(sha256sum /tmp/k.bin | cut -d' ' -f1)"
    touch "$NEARBY_BLUEZ_VM_OUT/k-ready"

    started="$(now)"
    bluez_send_guest_run k --no-upgrade
    rate="$(awk -v s="$send_seconds" -v b="$(stat -c %s /tmp/k.bin)" 'BEGIN { printf "%.0f", b / 1024 / s }')"
    report "k: BlueZ-backed nearby send delivers bytes + a $(stat -c %s /tmp/k.bin)-byte file over a Weave GATT socket (BlueZ GATT client) to our user-space host (--no-upgrade)" \
        "$send_ok" "$started" "[attempt $send_attempt: send ran ${send_seconds} s incl. discovery, >= ${rate} KiB/s; k-sha256=$k_sha256]"
    ((send_ok)) || cat /tmp/k-send.out /tmp/k-send.log >&2

    started="$(now)"
    if [[ "${NEARBY_BLUEZ_VM_UPGRADE:-1}" != 1 || ! -e /sys/class/net/eth0 ]]; then
        echo "skip l: NEARBY_BLUEZ_VM_UPGRADE=0, or the guest has no network (NEARBY_BLUEZ_VM_NET=user)"
        return
    fi
    # --linger: stay connected a moment after the file, so that an upgrade still under way can finish.
    bluez_send_guest_run l --linger 2
    local moved=0
    grep '"medium_changed"' /tmp/l-send.out | grep -q '"medium":"wifi-lan"' && moved=1
    report "l: BlueZ-backed nearby send moves to Wi-Fi LAN (bandwidth upgrade through QEMU's NAT) and delivers the file" \
        "$((send_ok && moved))" "$started" \
        "[attempt $send_attempt: send ran ${send_seconds} s; $(grep -o '"medium_changed"[^}]*' /tmp/l-send.out | head -n1)]"
    ((send_ok && moved)) || cat /tmp/l-send.out /tmp/l-send.log >&2
}

# On the host: once the guest says k-ready, our user-space host's advertiser on controller $1, bandwidth upgrade
# allowed (Wi-Fi LAN as target). Not before: test b would find it (it also advertises 0xFEF3) and test d would
# open a bare L2CAP channel to it; after that its channel server refused the guest's connections (ECONNREFUSED).
start_bluez_send_receiver() {
    mkdir -p "$work/k-inbox"
    (
        bluez_vm_await_flag k-ready 3000 >/dev/null || exit 0
        # Always with the debug log: when k or l fails before the connection is accepted, the advertiser's log says
        # why it closed the connection (a failed rig run prints its notices and warnings).
        exec "$nearby" advertise --service-id "$k_service" --name hostk --accept --json --medium ble --verbose \
            --hci "tcp:127.0.0.1:$1" --receive-dir "$work/k-inbox" 2>"$work/k-advertise.log"
    ) >"$work/k-advertise.out" &
    pids+=($!)
}

# On the host, after the guest ($1: the guest's output): the advertiser received the guest's file (same SHA-256)
# in k and l, and the connection of l moved to Wi-Fi LAN. Sets rc on failure.
check_bluez_send_on_host() {
    local sha received
    sha="$(grep -o 'k-sha256=[0-9a-f]*' "$1" | head -n1 | cut -d= -f2)"
    received="$(grep '"payload_received"' "$work/k-advertise.out" | grep -c "\"sha256\":\"${sha:-none}\"" || true)"
    if [[ -n "$sha" && "$received" -ge 1 ]]; then
        echo "ok   k (host side): our user-space host received the guest's file $received time(s), sha256 ${sha:0:12}..." >&2
    else
        echo "FAIL k (host side): no payload_received with sha256 ${sha:-?} [$(grep -c '"payload_received"' "$work/k-advertise.out") payloads]" >&2
        ((rc != 0)) || rc=1
    fi
    # The data path: every connection of the guest's sender came through the host's Weave GATT service.
    local weave l2cap
    weave="$(grep -c 'Weave socket open' "$work/k-advertise.log" || true)"
    l2cap="$(grep -c 'incoming L2CAP channel' "$work/k-advertise.log" || true)"
    if ((weave >= 1 && l2cap == 0)); then
        echo "ok   k (host side): the guest's connections came over the Weave GATT socket ($weave socket(s), no L2CAP channel)" >&2
    else
        echo "FAIL k (host side): expected Weave GATT sockets only, saw $weave Weave socket(s) and $l2cap L2CAP channel(s)" >&2
        ((rc != 0)) || rc=1
    fi
    if grep -q '^ok   l: .*Wi-Fi LAN' "$1"; then
        if grep '"medium_changed"' "$work/k-advertise.out" | grep -q '"medium":"wifi-lan"'; then
            echo "ok   l (host side): the advertiser's connection moved to Wi-Fi LAN" >&2
        else
            echo "FAIL l (host side): the advertiser reported no medium_changed to wifi-lan" >&2
            ((rc != 0)) || rc=1
        fi
    fi
}
