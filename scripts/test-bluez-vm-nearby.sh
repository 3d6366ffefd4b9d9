# Sourced by scripts/test-bluez-vm.sh (on the host and in the guest): test j, a BlueZ-backed `nearby advertise`
# (no --hci: BlueZ is the default radio; BlueZGAP advertising through LEAdvertisingManager1, a kernel L2CAP server) in the guest that our
# user-space host's `nearby send --hci tcp:...` on the host finds and sends bytes and a 100 kB file to.
# Uses the caller's now/since/report (guest) and work/pids/nearby/rc/bluez_vm_await_flag (host).
# shellcheck shell=bash

# --- BlueZ-backed nearby advertise (test j) --------------------------------------------------------------------
j_service=com.example.bluez.j
j_bytes="hello from the user-space host"

# In the guest (after i; uses report/since/now of the guest block below): drop LE links (the virtual controller
# does not advertise next to a connection), advertise through BlueZ, tell the host (j-ready in the run folder),
# and wait for the bytes and the file.
# The file goes host -> guest through the emulated wire (virtio console into the guest's tty and hci_uart): twice
# on a loaded machine an SDU went missing on the way in (the guest's session then saw a sequence number skip and
# dropped the connection, as it must), while the other direction (k, 1 MiB) never lost one. So j runs once more,
# with a fresh advertiser and sender, when its first attempt fails; the first failure is printed either way. Each
# attempt's advertiser has its own name (vmj1, vmj2), which the sender looks for: a second sender looking for one
# name once connected to the first attempt's advertisement, still seen on air, and the retry failed too.
bluez_nearby_guest_test() {
    local started ok=0 attempt
    started="$(now)"
    for attempt in 1 2; do
        bluez_nearby_guest_attempt "$attempt" && { ok=1; break; }
        echo "note j: attempt $attempt failed: $(grep -h '"disconnected"' "/tmp/j$attempt-advertise.out" | head -n1)" >&2
        cat "/tmp/j$attempt-advertise.out" "/tmp/j$attempt-advertise.log" >&2
    done
    report "j: nearby advertise with no --hci picks BlueZ (bluez:hci0) and receives bytes and a 100 kB file from our user-space host's nearby send" \
        "$ok" "$started" "[attempt $attempt: $(grep -c '"payload_received"' "/tmp/j$attempt-advertise.out") payloads received, file sha256 ${NEARBY_J_FILE_SHA256:0:12}...]"
}

# One attempt of j ($1: 1 or 2); succeeds once both payloads arrived.
bluez_nearby_guest_attempt() {
    local ok=0 out="/tmp/j$1-advertise.out" log="/tmp/j$1-advertise.log" links address kind type pid
    for ((i = 0; i < 50; i++)); do
        links="$(script -qc 'btmgmt con' /dev/null | tr -d '\r' | grep -iE 'type (LE|le)' || true)"
        [[ -n "$links" ]] || break
        while read -r address _ _ kind _; do
            [[ "${kind,,}" == random ]] && type=2 || type=1
            btmgmt disconnect -t "$type" "$address" >/dev/null 2>&1 || true
        done <<<"$links"
        sleep 0.2
    done
    mkdir -p "/tmp/j$1-inbox"
    timeout 60 "${NEARBY_BIN:-.build/debug/nearby}" advertise --service-id "$j_service" --name "vmj$1" --accept --json \
        --medium ble --no-upgrade --verbose --receive-dir "/tmp/j$1-inbox" >"$out" 2>"$log" &
    pid=$!
    for ((i = 0; i < 300; i++)); do
        grep -q '"discoverable":true' "$out" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    # No --hci: BLE goes through the system's BlueZ because bluetoothd runs with an adapter (the default radio).
    if grep -q '"discoverable":true' "$out" && grep -q 'controller=bluez:hci0' "$log"; then
        touch "$NEARBY_BLUEZ_VM_OUT/j-ready$1"
        for ((i = 0; i < 500; i++)); do
            bluez_nearby_guest_received "$out" && { ok=1; break; }
            kill -0 "$pid" 2>/dev/null || break
            grep -q '"disconnected"' "$out" && break
            sleep 0.1
        done
        # The payloads and the end of the connection can be written between the two checks above.
        bluez_nearby_guest_received "$out" && ok=1
    fi
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    ((ok))
}

# Whether the advertiser's output $1 has both payloads (the bytes, and the file with the host's SHA-256).
bluez_nearby_guest_received() {
    # JSON keys are sorted: "sha256" comes before "type".
    grep '"payload_received"' "$1" | grep -q '"type":"bytes"' &&
        grep '"payload_received"' "$1" | grep -q "\"sha256\":\"$NEARBY_J_FILE_SHA256\""
}

# On the host: once the guest says j-ready, `nearby send` from our user-space host on controller $1. It leaves as
# soon as its payloads are sent, with no linger: both sides are swift-nearby, so a payload counts as sent only once
# the guest acknowledged it (PAYLOAD_ACK) and the disconnect waits for the guest's safe-to-disconnect ack
# (docs/LINK-SAFETY.md). Before those, a sender that disconnected at once lost its last frames on the way into the
# slow guest in 3 of 9 runs on a loaded machine, and lingered 3 s to hide it.
start_bluez_nearby_sender() {
    head -c 100000 /dev/urandom >"$work/j.bin"
    NEARBY_J_FILE_SHA256="$(sha256sum "$work/j.bin" | cut -d' ' -f1)"
    export NEARBY_J_FILE_SHA256
    (
        for attempt in 1 2; do
            bluez_vm_await_flag "j-ready$attempt" 3000 >/dev/null || continue
            timeout 50 "$nearby" send --service-id "$j_service" --to-name "vmj$attempt" --name hostj --accept --json \
                --bytes "$j_bytes" --file "$work/j.bin" --medium ble --hci "tcp:127.0.0.1:$1" --no-upgrade \
                --timeout 45 >"$work/j-send$attempt.out" 2>"$work/j-send$attempt.log"
        done
    ) &
    pids+=($!)
}

# On the host, after the guest: the sender sent both payloads (the guest checked what arrived). Sets rc on failure.
check_bluez_nearby_on_host() {
    local attempt=1
    [[ -f "$work/j-send2.out" ]] && attempt=2
    touch "$work/j-send$attempt.out" "$work/j-send$attempt.log"
    cp "$work/j-send$attempt.out" "$work/j-send.out"
    cp "$work/j-send$attempt.log" "$work/j-send.log"
    if [[ "$(grep -c '"payload_sent"' "$work/j-send.out")" == 2 ]]; then
        echo "ok   j (host side): nearby send sent 2 payloads over BLE to the guest's BlueZ-backed advertiser (attempt $attempt)" >&2
    else
        echo "FAIL j (host side): $(tr '\n' ' ' <"$work/j-send.out") / $(tail -n 5 "$work/j-send.log" | tr '\n' ' ')" >&2
        ((rc != 0)) || rc=1
    fi
}
