#!/usr/bin/env bash
# The main demo: two `nearby` peers find each other over real mDNS (Avahi) and TCP inside a private network
# namespace, connect, show matching verification codes, and exchange a message and a 100 MB file with a progress
# bar; the file's SHA-256 is checked on arrival, and its transfer rate is compared with a plain TCP copy of the
# same bytes on the same loopback. Exits 0 only if everything checks out.
#
#   scripts/demo.sh            (as root on Debian 12; installs what it needs)
#   DEMO_SIZE_MB=20 scripts/demo.sh
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

if [[ "${NEARBY_TEST_NETNS:-}" != 1 ]]; then
    scripts/install-deps.sh
    swift build --product nearby >&2
    exec scripts/with-test-network.sh "$repo_root/scripts/demo.sh" "$@"
fi

# --- inside the private network namespace, with avahi running -----------------------------------------------
nearby="$(swift build --show-bin-path)/nearby"
size_mb="${DEMO_SIZE_MB:-100}"
work="$(mktemp -d "${TMPDIR:-/tmp}/nearby-demo.XXXXXX")"
advertiser_pid=""
cleanup() {
    [[ -n "$advertiser_pid" ]] && kill "$advertiser_pid" 2>/dev/null && wait "$advertiser_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
fail() { printf 'demo FAILED: %s\n' "$*" >&2; exit 1; }
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -n 1; }

say "Creating a ${size_mb} MB test file"
head -c "$((size_mb * 1000000))" /dev/urandom > "$work/photo.bin"
source_sha="$(sha256sum "$work/photo.bin" | cut -d' ' -f1)"

say "Starting the advertiser 'linux-box' (service com.example.demo)"
"$nearby" advertise --service-id com.example.demo --name linux-box --accept --receive-dir "$work/inbox" --json \
    > "$work/advertiser.jsonl" 2> "$work/advertiser.err" &
advertiser_pid=$!
for _ in $(seq 1 100); do grep -q '"advertising"' "$work/advertiser.jsonl" 2>/dev/null && break; sleep 0.1; done
grep -q '"advertising"' "$work/advertiser.jsonl" || fail "the advertiser did not start: $(cat "$work/advertiser.err")"
echo "    $(grep '"advertising"' "$work/advertiser.jsonl")"

say "Discovering over mDNS"
"$nearby" discover --service-id com.example.demo --timeout 3 --json | tee "$work/discover.jsonl" | sed 's/^/    /'
grep -q '"endpoint_found"' "$work/discover.jsonl" || fail "the advertiser was not discovered"

say "Connecting by name and sending a message and the file"
progress() {
    while IFS= read -r line; do
        case "$line" in
        *'"transfer_update"'*'"total":'"$((size_mb * 1000000))"*)
            [[ -s "$work/file-start" ]] || date +%s%N > "$work/file-start"
            bytes="$(printf '%s' "$line" | field bytes)"
            percent=$((bytes * 100 / (size_mb * 1000000)))
            filled=$((percent * 40 / 100))
            printf '\r    [%-40s] %3d%%' "$(printf '%*s' "$filled" '' | tr ' ' '#')" "$percent"
            ;;
        *'"transfer_update"'*) ;;
        *'"payload_sent"'*'"type":"file"'*)
            date +%s%N > "$work/file-end"
            printf '\n    %s' "$line"
            ;;
        *) printf '\n    %s' "$line" ;;
        esac
        printf '%s\n' "$line" >> "$work/sender.jsonl"
    done
    printf '\n'
}
"$nearby" send --service-id com.example.demo --to-name linux-box --name demo-laptop --accept \
    --bytes "hello from swift-nearby" --file "$work/photo.bin" --json 2> "$work/sender.err" | progress
status="${PIPESTATUS[0]}"
[[ "$status" == 0 ]] || fail "nearby send exited with $status: $(cat "$work/sender.err")"

say "Checking"
sender_digits="$(grep '"connection_initiated"' "$work/sender.jsonl" | field digits)"
advertiser_digits="$(grep '"connection_initiated"' "$work/advertiser.jsonl" | field digits)"
echo "    verification code: sender $sender_digits, advertiser $advertiser_digits"
[[ -n "$sender_digits" && "$sender_digits" == "$advertiser_digits" ]] || fail "verification codes differ"
for _ in $(seq 1 100); do grep -q '"type":"file"' "$work/advertiser.jsonl" && break; sleep 0.1; done
grep '"payload_received"' "$work/advertiser.jsonl" | grep -q '"type":"bytes"' || fail "the message did not arrive"
received="$(grep '"payload_received"' "$work/advertiser.jsonl" | grep '"type":"file"' | field path)"
[[ -f "$received" ]] || fail "the file did not arrive"
received_sha="$(sha256sum "$received" | cut -d' ' -f1)"
echo "    sha256 sent     $source_sha"
echo "    sha256 received $received_sha"
[[ "$received_sha" == "$source_sha" ]] || fail "the received file differs"

say "Comparing with a plain TCP copy of the same bytes to disk"
nearby_ms=$((($(cat "$work/file-end") - $(cat "$work/file-start")) / 1000000))
plain_ms="$(python3 - "$work/photo.bin" <<'PY'
import socket, sys, threading, time
data = open(sys.argv[1], "rb").read()
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
port = server.getsockname()[1]
def sink():
    connection, _ = server.accept()
    with open(sys.argv[1] + ".plain-copy", "wb") as out:
        while chunk := connection.recv(1 << 20):
            out.write(chunk)
thread = threading.Thread(target=sink); thread.start()
start = time.monotonic()
client = socket.create_connection(("127.0.0.1", port)); client.sendall(data); client.close()
thread.join()
print(int((time.monotonic() - start) * 1000))
PY
)"
echo "    nearby file payload (encrypted 64 KiB chunks, written to disk): ${nearby_ms} ms for ${size_mb} MB"
echo "    plain TCP copy written to disk:                                  ${plain_ms} ms"
python3 -c "import sys; n,p=int(sys.argv[1]),max(1,int(sys.argv[2])); print(f'    nearby takes {n/p:.1f}x the time of plain TCP (throughput ratio {p/n:.2f})')" "$nearby_ms" "$plain_ms"
say "Demo passed"
